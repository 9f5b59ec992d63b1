package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
)

// recorder keeps every request a test server received: the method, the
// path, the Authorization header and the body.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (rc *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" body="+string(body))
		rc.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		next.ServeHTTP(w, r)
	})
}

func (rc *recorder) all() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.reqs...)
}

// An MCP server whose protected-resource metadata names a second
// (hostile) authorization server, not the issuer the client is registered
// with: for a client_credentials secret, a private key and a login with a
// pre-registered secret, the connection is refused in one sentence naming
// both, and the hostile server receives no request carrying the secret,
// an assertion or a token request at all. The same entries connect when
// the metadata names the issuer. Before, the secret went to whichever
// server the metadata named.
func TestOAuth_CredentialsGoOnlyToTheRegisteredIssuer(t *testing.T) {
	as := newTestAS(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	as.keyClient = &key.PublicKey
	hostile := newTestAS(t)
	rec := &recorder{}
	hostile.srv.Config.Handler = rec.wrap(hostile.srv.Config.Handler)
	good, bad := newProtectedUpstream(t, as), newProtectedUpstream(t, hostile)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "m2m.pem"), keyPEM(t, key))
	lookup := func(k string) (string, bool) { return as.secret, k == "S" }
	// The login's client is pre-registered with its redirect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	as.clients["m2m"] = asClient{redirects: []string{fmt.Sprintf("http://127.0.0.1:%d/callback", port)}}
	issuer := `,"issuer":` + jsonString(as.url) + `}`
	entries := map[string]string{
		"secret": `{"grant":"client_credentials","client_id":"m2m","client_secret":{"env":"S"}` + issuer,
		"key":    `{"grant":"client_credentials","client_id":"m2m-key","private_key":{"file":"m2m.pem"}` + issuer,
		"login":  `{"client_id":"m2m","client_secret":{"env":"S"},"redirect_port":` + fmt.Sprint(port) + issuer,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(name string, up *protectedUpstream) error {
		path := writeFile(t, filepath.Join(dir, "proxy.json"), keyServerConfig(up.mcpURL, entries[name]))
		cfg, err := LoadConfig(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return connectAs(ctx, t, name, cfg.Servers[0], lookup, 20*time.Second, func(u string) error { return scriptedBrowser(t, u) })
	}
	for name := range entries {
		err := connect(name, bad)
		var me *IssuerMismatchError
		if !errors.As(err, &me) || me.Named != hostile.url || me.Issuer != as.url {
			t.Fatalf("%s: %v, want the issuer refused", name, err)
		}
		if msg := me.Error(); strings.Contains(msg, "\n") || strings.Count(msg, ". ") > 0 || !strings.Contains(msg, hostile.url) {
			t.Errorf("%s: not one sentence naming the server: %q", name, msg)
		}
		if err := connect(name, good); err != nil {
			t.Fatalf("%s: the registered issuer: %v", name, err)
		}
	}
	basic := base64.StdEncoding.EncodeToString([]byte("m2m:" + as.secret))
	for _, r := range rec.all() {
		if strings.Contains(r, as.secret) || strings.Contains(r, basic) || strings.Contains(r, "client_assertion") || strings.Contains(r, "/token") {
			t.Errorf("the hostile authorization server received %q", r)
		}
	}
	if len(as.tokens()) < 3 {
		t.Fatalf("the registered issuer issued %d tokens, want one per entry at least", len(as.tokens()))
	}
}

// An OAuth entry with a client_secret or a private_key and no issuer is
// refused in one sentence naming oauth.issuer; one without either needs
// none.
func TestConfig_CredentialsNeedTheirIssuer(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	writeFile(t, filepath.Join(dir, "ok.pem"), keyPEM(t, key))
	const ep = "https://mcp.example.com/mcp"
	for name, oauth := range map[string]string{
		"client_credentials secret": `{"grant":"client_credentials","client_id":"c","client_secret":{"env":"S"}}`,
		"client_credentials key":    `{"grant":"client_credentials","client_id":"c","private_key":{"file":"ok.pem"}}`,
		"login secret":              `{"client_id":"c","client_secret":{"env":"S"}}`,
		"not a URL":                 `{"client_id":"c","client_secret":{"env":"S"},"issuer":"as.example.com"}`,
	} {
		path := writeFile(t, filepath.Join(dir, "proxy.json"), keyServerConfig(ep, oauth))
		_, err := LoadConfig(path)
		var ce *agentrt.ConfigError
		if !errors.As(err, &ce) || ce.Field != "servers[0].oauth.issuer" {
			t.Errorf("%s: %v, want a configuration error naming servers[0].oauth.issuer", name, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Count(strings.TrimSuffix(msg, "."), ". ") > 0 {
			t.Errorf("%s: not one sentence: %q", name, msg)
		}
	}
	path := writeFile(t, filepath.Join(dir, "proxy.json"), keyServerConfig(ep, `{"client_id":"c"}`))
	if _, err := LoadConfig(path); err != nil {
		t.Fatalf("a public client needs no issuer: %v", err)
	}
}

// connectAs reaches server s as entry name does: "login" runs LoginServer
// with open as the browser; any other entry dials s and connects once.
func connectAs(ctx context.Context, t *testing.T, name string, s ServerConfig, lookup func(string) (string, bool), timeout time.Duration, open func(string) error) error {
	t.Helper()
	if name == "login" {
		_, err := LoginServer(ctx, s, LoginOptions{Lookup: lookup, Timeout: timeout, Open: open})
		return err
	}
	srv, err := s.Dial(DialOptions{Lookup: lookup})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return credentials.ConnectOnce(ctx, s.Endpoint, srv.HTTPClient, srv.OAuthHandler)
}
