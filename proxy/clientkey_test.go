package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/credentials"
)

// keyPEM is key as a PKCS #8 PEM block, as the conformance suite hands it
// out.
func keyPEM(t testing.TB, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// keyServerConfig is a configuration with one client_credentials server
// at endpoint whose oauth entry is oauth.
func keyServerConfig(endpoint, oauth string) string {
	return `{"database":"runs.db","servers":[{"name":"up","endpoint":` + jsonString(endpoint) +
		`,"manifest":"up.manifest.json","rules":{},"oauth":` + oauth + `}]}`
}

// A client_credentials server configured with a private key gets its
// tokens with an RFC 7523 client assertion: every token request carries a
// new one (its own jti), signed ES256 as r||s, with iss = sub = the client
// ID, aud = the authorization server and an exp minutes ahead. The
// authorization server here refuses a jti it saw and an assertion that
// does not verify, and the test verifies every assertion sent on its own
// with crypto/ecdsa.
func TestClientCredentials_PrivateKeyJWTAssertionIsFreshAndVerifies(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := newTestAS(t)
	as.keyClient = &key.PublicKey
	// Tokens that live one second are stale at once (x/oauth2 renews ten
	// seconds early): each connection asks for a new one.
	as.setTTL(time.Second)
	pu := newProtectedUpstream(t, as)
	dir := t.TempDir()
	pemText := keyPEM(t, key)
	writeFile(t, filepath.Join(dir, "m2m.pem"), pemText)
	path := writeFile(t, filepath.Join(dir, "proxy.json"), keyServerConfig(pu.mcpURL,
		`{"grant":"client_credentials","client_id":"m2m-key","private_key":{"file":"m2m.pem","kid":"k1"},"issuer":`+jsonString(as.url)+`}`))
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if k := s.OAuth.PrivateKey; k == nil || k.Alg != ES256 || k.File != filepath.Join(dir, "m2m.pem") || k.KeyID != "k1" {
		t.Fatalf("the private key entry: %+v", s.OAuth.PrivateKey)
	}
	srv, err := s.Dial(DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 2 {
		if err := credentials.ConnectOnce(ctx, s.Endpoint, srv.HTTPClient, srv.OAuthHandler); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
	}
	as.mu.Lock()
	sent := append([]string(nil), as.assertions...)
	as.mu.Unlock()
	if len(sent) < 2 {
		t.Fatalf("%d token requests with an assertion, want at least 2", len(sent))
	}
	seen := map[string]bool{}
	for i, a := range sent {
		c, err := verifyAssertion(&key.PublicKey, a, as.url, "m2m-key", time.Now())
		if err != nil {
			t.Fatalf("assertion %d does not verify: %v", i+1, err)
		}
		if seen[c.JTI] {
			t.Fatalf("assertion %d reuses jti %q", i+1, c.JTI)
		}
		seen[c.JTI] = true
		hb, _ := base64.RawURLEncoding.DecodeString(strings.Split(a, ".")[0])
		var h struct{ Kid string }
		if json.Unmarshal(hb, &h) != nil || h.Kid != "k1" {
			t.Fatalf("assertion %d: header %s, want kid k1", i+1, hb)
		}
	}
	if len(pu.acceptedTokens()) == 0 {
		t.Fatal("the protected server accepted no token")
	}
	// An authorization server that no longer knows the key refuses it:
	// the error says so without the assertion it refused.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	as.mu.Lock()
	as.keyClient = &other.PublicKey
	as.mu.Unlock()
	refused, err := s.Dial(DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = credentials.ConnectOnce(ctx, s.Endpoint, refused.HTTPClient, refused.OAuthHandler)
	as.mu.Lock()
	last := as.assertions[len(as.assertions)-1]
	as.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), last) {
		t.Fatalf("a refused key: %v", err)
	}
	// Neither the key nor an assertion is in the configuration's
	// directory beyond the key file itself.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		for _, a := range sent {
			if strings.Contains(string(b), a) {
				t.Fatalf("%s holds an assertion", e.Name())
			}
		}
		if e.Name() != "m2m.pem" && strings.Contains(string(b), strings.Split(pemText, "\n")[1]) {
			t.Fatalf("%s holds the private key", e.Name())
		}
	}
}

// A client_credentials entry names exactly one of client_secret and
// private_key; the key is an owner-only PEM file holding an EC P-256 (or
// RSA) key. Anything else is refused in one sentence naming the field.
func TestConfig_RefusesABadClientCredentialsKey(t *testing.T) {
	dir := t.TempDir()
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	writeFile(t, filepath.Join(dir, "ok.pem"), keyPEM(t, p256))
	writeFile(t, filepath.Join(dir, "rsa.pem"), keyPEM(t, rsaKey))
	writeFile(t, filepath.Join(dir, "p384.pem"), keyPEM(t, p384))
	writeFile(t, filepath.Join(dir, "notpem.pem"), "not a key\n")
	writeFile(t, filepath.Join(dir, "cert.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})))
	group := writeFile(t, filepath.Join(dir, "group.pem"), keyPEM(t, p256))
	if err := os.Chmod(group, 0o640); err != nil {
		t.Fatal(err)
	}
	const ep = "https://mcp.example.com/mcp"
	key := func(file string) string {
		return `{"grant":"client_credentials","client_id":"c","private_key":{"file":"` + file + `"},"issuer":"https://as.example.com"}`
	}
	cases := map[string]struct{ oauth, field string }{
		"both secret and key": {`{"grant":"client_credentials","client_id":"c","client_secret":{"env":"S"},"private_key":{"file":"ok.pem"}}`, "servers[0].oauth"},
		"neither":             {`{"grant":"client_credentials","client_id":"c"}`, "servers[0].oauth"},
		"no client_id":        {`{"grant":"client_credentials","private_key":{"file":"ok.pem"}}`, "servers[0].oauth.private_key"},
		"group-readable key":  {key("group.pem"), "servers[0].oauth.private_key.file"},
		"a P-384 key":         {key("p384.pem"), "servers[0].oauth.private_key.file"},
		"not PEM":             {key("notpem.pem"), "servers[0].oauth.private_key.file"},
		"a certificate":       {key("cert.pem"), "servers[0].oauth.private_key.file"},
		"a missing file":      {key("absent.pem"), "servers[0].oauth.private_key.file"},
		"no file":             {`{"grant":"client_credentials","client_id":"c","private_key":{}}`, "servers[0].oauth.private_key.file"},
		"an unknown alg":      {`{"grant":"client_credentials","client_id":"c","private_key":{"file":"ok.pem","alg":"HS256"}}`, "servers[0].oauth.private_key.alg"},
		"alg and key differ":  {`{"grant":"client_credentials","client_id":"c","private_key":{"file":"rsa.pem","alg":"ES256"}}`, "servers[0].oauth.private_key.file"},
		"a key for a login":   {`{"client_id":"c","private_key":{"file":"ok.pem"}}`, "servers[0].oauth.private_key"},
	}
	for name, c := range cases {
		path := writeFile(t, filepath.Join(dir, "proxy.json"), keyServerConfig(ep, c.oauth))
		_, err := LoadConfig(path)
		var ce *agentrt.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: %v, want a configuration error naming %s", name, err, c.field)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Count(strings.TrimSuffix(msg, "."), ". ") > 0 {
			t.Errorf("%s: not one sentence: %q", name, msg)
		}
		if strings.Contains(err.Error(), "BEGIN") {
			t.Errorf("%s: the error shows key material: %v", name, err)
		}
	}
	for file, alg := range map[string]KeyAlg{"ok.pem": ES256, "rsa.pem": RS256} {
		path := writeFile(t, filepath.Join(dir, "proxy.json"), keyServerConfig(ep, key(file)))
		cfg, err := LoadConfig(path)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if k := cfg.Servers[0].OAuth.PrivateKey; k == nil || k.Alg != alg {
			t.Fatalf("%s: %+v, want alg %s", file, k, alg)
		}
	}
}
