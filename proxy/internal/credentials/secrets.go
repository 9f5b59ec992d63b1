package credentials

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/trace"
)

// MaxSecretFile bounds a secret or token file.
const MaxSecretFile = 1 << 20

// ErrSecret marks a secret the proxy could not read: an environment
// variable it was not started with, or a secret file it refuses.
var ErrSecret = errors.New("proxy: a secret could not be read")

// SecretError names the server, the field and where the secret should
// have been; never its value.
type SecretError struct {
	Server string
	Field  string
	Where  string
	Reason string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("proxy: server %q: %s: %s %s", e.Server, e.Field, e.Where, e.Reason)
}

// Is matches ErrSecret.
func (e *SecretError) Is(target error) bool { return target == ErrSecret }

// SecretRef says where one secret lives: exactly one of Env (a variable
// of the proxy's own environment) and File (an owner-only file, read
// through files.ReadSecret: owner-only, not even readable by group or
// others; one trailing newline dropped). Prefix is written
// before the secret ("Bearer "); it is configuration, not secret. The
// configuration holds only the reference, so the secret's bytes are in no
// file the proxy writes and in none of its output.
type SecretRef struct {
	Env    string
	File   string
	Prefix string
}

// FileSecret is a SecretRef's JSON form.
type FileSecret struct {
	Env    string `json:"env"`
	File   string `json:"file"`
	Prefix string `json:"prefix"`
}

// Resolve checks the reference; rel makes a file's path absolute.
func (fs FileSecret) Resolve(field string, rel func(string) string) (SecretRef, error) {
	if (fs.Env == "") == (fs.File == "") {
		return SecretRef{}, bad(field, "must set exactly one of env (a variable the proxy is started with) and file (an owner-only secret file)")
	}
	if fs.Env != "" && strings.ContainsAny(fs.Env, "=\x00") {
		return SecretRef{}, bad(field+".env", "%q is not a variable name", trace.Sanitize(fs.Env))
	}
	if strings.ContainsAny(fs.Prefix, "\r\n\x00") {
		return SecretRef{}, bad(field+".prefix", "must not hold a line break")
	}
	r := SecretRef{Env: fs.Env, Prefix: fs.Prefix}
	if fs.File != "" {
		r.File = rel(fs.File)
	}
	return r, nil
}

// Where names the secret's place for a person: "environment variable X"
// or "secret file P".
func (r SecretRef) Where() string {
	if r.Env != "" {
		return "environment variable " + r.Env
	}
	return "secret file " + r.File
}

// Secret reads the secret r references for a server's field (named in its
// errors, never its value); lookup is the proxy's environment.
func Secret(r SecretRef, server, field string, lookup func(string) (string, bool)) (string, error) {
	return r.value(server, field, lookup)
}

// value reads the secret. lookup is the proxy's environment.
func (r SecretRef) value(server, field string, lookup func(string) (string, bool)) (string, error) {
	fail := func(reason string) error {
		return &SecretError{Server: server, Field: field, Where: r.Where(), Reason: reason}
	}
	var v string
	if r.Env != "" {
		s, ok := lookup(r.Env)
		if !ok || s == "" {
			return "", fail("is not set in the proxy's environment; start the proxy with it")
		}
		v = s
	} else {
		b, err := files.ReadSecret(r.File, MaxSecretFile)
		if err != nil {
			return "", fail("cannot be read: " + trace.Sanitize(err.Error()))
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		if len(b) == 0 {
			return "", fail("is empty")
		}
		v = string(b)
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fail("holds a line break, which no header or variable may carry")
	}
	return r.Prefix + v, nil
}

// headerTransport adds the server's headers to every request for the
// endpoint's origin and to no other: a legacy SSE server names where its
// messages go, and a credential must not follow it to another host.
type headerTransport struct {
	inner   http.RoundTripper
	scheme  string
	host    string
	headers http.Header
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Scheme, h.scheme) || !strings.EqualFold(req.URL.Host, h.host) {
		return h.inner.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range h.headers {
		req.Header[k] = append([]string(nil), vs...)
	}
	return h.inner.RoundTrip(req)
}

// HeaderClient is the client a remote server is reached with: a fresh
// one whose transport adds headers to every request for endpoint's origin
// (and to no other), or nil when there are none.
func HeaderClient(endpoint string, headers http.Header) *http.Client {
	if len(headers) == 0 {
		return nil
	}
	u, _ := url.Parse(endpoint)
	return &http.Client{Transport: &headerTransport{inner: http.DefaultTransport.(*http.Transport).Clone(),
		scheme: u.Scheme, host: u.Host, headers: headers}}
}
