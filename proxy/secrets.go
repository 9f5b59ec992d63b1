package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/trace"
)

// maxSecretFile bounds a secret or token file.
const maxSecretFile = 1 << 20

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

// fileSecret is a SecretRef's JSON form.
type fileSecret struct {
	Env    string `json:"env"`
	File   string `json:"file"`
	Prefix string `json:"prefix"`
}

func (fs fileSecret) resolve(field string, rel func(string) string) (SecretRef, error) {
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
		b, err := files.ReadSecret(r.File, maxSecretFile)
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

// Resolved is a server's secrets as read when the proxy starts: the
// header values and the stdio variables. It is never printed.
type resolved struct {
	headers http.Header
	env     []string
}

// resolveSecrets reads every secret a server's entry references.
func (s ServerConfig) resolveSecrets(lookup func(string) (string, bool)) (resolved, error) {
	var out resolved
	if len(s.Headers) > 0 {
		out.headers = http.Header{}
		for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
			v, err := s.Headers[name].value(s.Name, "headers."+name, lookup)
			if err != nil {
				return out, err
			}
			out.headers.Set(name, v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.SecretEnv)) {
		v, err := s.SecretEnv[name].value(s.Name, "secret_env."+name, lookup)
		if err != nil {
			return out, err
		}
		out.env = append(out.env, name+"="+v)
	}
	return out, nil
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

// DialOptions are what connecting a configured server needs beyond its
// entry.
type DialOptions struct {
	// Lookup reads the proxy's environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// OnLoginNeeded, when set, hears that an OAuth server's login no
	// longer works (revoked, expired without refresh).
	OnLoginNeeded func(server string)
}

// Dial is the mcp.Server for this entry with its secrets read: headers
// on every request to the endpoint's origin, secret variables for a stdio
// server, and for an OAuth server the tokens `agentrt-proxy login` stored
// (or client credentials). An error names the secret that is missing,
// never a value.
func (s ServerConfig) Dial(opts DialOptions) (mcp.Server, error) {
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	srv := s.Server()
	sec, err := s.resolveSecrets(opts.Lookup)
	if err != nil {
		return srv, err
	}
	srv.Env = append(srv.Env, sec.env...)
	srv.HTTPClient = HeaderClient(s.Endpoint, sec.headers)
	if s.OAuth != nil {
		h, err := s.runtimeOAuth(opts, srv.HTTPClient)
		if err != nil {
			return srv, err
		}
		srv.OAuthHandler = h
	}
	return srv, nil
}
