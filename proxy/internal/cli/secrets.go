package cli

import (
	"context"
	"fmt"
	"github.com/agentrt/agentrt/internal/files"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// Where init puts a secret a host entry references as ${VAR}.
const (
	// storeEnv leaves it in the host's environment: the configuration
	// names the variable and the proxy's host entry passes it on.
	storeEnv = "env"
	// storeFile copies its value (read from init's environment) into an
	// owner-only file under secrets/ beside the configuration.
	storeFile = "file"
)

// secretsDir holds the secret files init writes, beside the
// configuration.
const secretsDir = "secrets"

// imported is one host entry's env and headers as the proxy carries them:
// literal stdio variables stay in env (the configuration is owner-only);
// every header and every referenced variable becomes a secret reference,
// never a value in the configuration.
type imported struct {
	// unsupported names why the entry cannot be carried, or "".
	unsupported string

	plainEnv map[string]string
	// secretEnv and headers are the configuration's references; a file
	// reference gets its path in writeFiles.
	secretEnv map[string]map[string]string
	headers   map[string]map[string]string
	// resolvedEnv and resolvedHeaders are the values, to pin with now.
	resolvedEnv     []string
	resolvedHeaders http.Header
	// values are every secret read, for redaction.
	values []string
	// pass maps each variable the host must pass to the proxy to the
	// host's own reference.
	pass  map[string]string
	files []secretFile
	notes []string
}

// secretFile is a secret init writes: its value and the reference that
// will name it.
type secretFile struct {
	suffix string
	value  string
	ref    map[string]string
}

// importSecrets reads e's env and headers under the -secret-store mode.
func importSecrets(e hostEntry, mode string, lookup func(string) (string, bool)) imported {
	im := imported{plainEnv: map[string]string{}, secretEnv: map[string]map[string]string{},
		headers: map[string]map[string]string{}, resolvedHeaders: http.Header{}, pass: map[string]string{}}
	take := func(what, rawKey, raw string, literalIsSecret bool) (map[string]string, string, bool) {
		key := trace.Sanitize(rawKey)
		sv, err := parseSecretValue(raw)
		if err != nil {
			im.unsupported = fmt.Sprintf("its %s %s %s", what, key, err)
			return nil, "", false
		}
		if sv.Var == "" {
			if !literalIsSecret {
				return nil, raw, true
			}
			ref := map[string]string{}
			im.files = append(im.files, secretFile{suffix: what + "." + rawKey, value: raw, ref: ref})
			im.notes = append(im.notes, fmt.Sprintf("%s %s: its literal value moved to an owner-only secret file", what, key))
			return ref, raw, true
		}
		v, ok := lookup(sv.Var)
		if !ok || v == "" {
			im.unsupported = fmt.Sprintf("its %s %s references %s, which is not set in init's environment; set it (as the host would) and run init again", what, key, sv.Ref)
			return nil, "", false
		}
		im.values = append(im.values, v)
		ref := map[string]string{}
		if sv.Prefix != "" {
			ref["prefix"] = sv.Prefix
		}
		switch mode {
		case storeEnv:
			ref["env"] = sv.Var
			im.pass[sv.Var] = sv.Ref
			im.notes = append(im.notes, fmt.Sprintf("%s %s: read from the proxy's environment variable %s, which the host passes on", what, key, sv.Var))
		default:
			im.files = append(im.files, secretFile{suffix: what + "." + rawKey, value: v, ref: ref})
			im.notes = append(im.notes, fmt.Sprintf("%s %s: the value of %s copied to an owner-only secret file", what, key, sv.Var))
		}
		return ref, sv.Prefix + v, true
	}
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		ref, v, ok := take("env", k, e.Env[k], false)
		if !ok {
			return im
		}
		if ref == nil {
			im.plainEnv[k] = v
			continue
		}
		im.secretEnv[k] = ref
		im.resolvedEnv = append(im.resolvedEnv, k+"="+v)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		ref, v, ok := take("header", k, e.Headers[k], true)
		if !ok {
			return im
		}
		im.headers[k] = ref
		im.resolvedHeaders.Set(k, v)
	}
	return im
}

// writeFiles writes each secret file, owner-only, under dir/secrets,
// named for the server, and points its reference at it.
func (im *imported) writeFiles(dir, server string) error {
	if len(im.files) == 0 {
		return nil
	}
	sd := filepath.Join(dir, secretsDir)
	if err := os.MkdirAll(sd, 0o700); err != nil {
		return err
	}
	for _, f := range im.files {
		name := server + "." + fileSafe(f.suffix) + ".secret"
		path := filepath.Join(sd, name)
		// Never over a file already there (an operator's own secret, or a
		// link planted in its place), and synced before its name exists.
		if err := files.WriteNew(path, []byte(f.value+"\n"), 0o600); err != nil {
			return fmt.Errorf("the secret file: %w", err)
		}
		f.ref["file"] = filepath.Join(secretsDir, name)
	}
	return nil
}

// report is what init says about the entry's secrets: where each lives,
// never a value.
func (im *imported) report() []string { return im.notes }

// fileSafe keeps letters, digits, '.', '_' and '-'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// authProbe notes whether a server answered 401 with a Bearer challenge:
// it asks for OAuth.
type authProbe struct {
	inner  http.RoundTripper
	bearer bool
}

func (a *authProbe) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.inner.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		for _, v := range resp.Header.Values("WWW-Authenticate") {
			if len(v) >= 6 && strings.EqualFold(v[:6], "bearer") {
				a.bearer = true
			}
		}
	}
	return resp, err
}

// probeClient is c (or a fresh client) with probe watching its responses.
func probeClient(c *http.Client, probe *authProbe) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	probe.inner = out.Transport
	if probe.inner == nil {
		probe.inner = http.DefaultTransport
	}
	out.Transport = probe
	return out
}

// initLogin logs in to an OAuth server init found, storing its tokens
// beside the configuration as <name>.oauth.json, and pins it with them.
func initLogin(ctx context.Context, name, endpoint, dir string, open bool, stdout, stderr io.Writer) (*mcp.Manifest, error) {
	sc := proxy.ServerConfig{Name: name, Endpoint: endpoint, ConnectTimeout: initConnectTimeout,
		OAuth: &proxy.OAuthConfig{Grant: proxy.GrantAuthorizationCode, Tokens: filepath.Join(dir, name+".oauth.json")}}
	fmt.Fprintf(stdout, "server %s asks for an OAuth login\n", trace.Sanitize(name))
	opts := proxy.LoginOptions{Stderr: stderr}
	if open {
		opts.Open = openBrowser
	}
	path, err := proxy.LoginServer(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "  logged in; the tokens are in %s (owner-only)\n", filepath.Base(path))
	srv, err := sc.Dial(proxy.DialOptions{})
	if err != nil {
		return nil, err
	}
	return mcp.Pin(ctx, srv)
}
