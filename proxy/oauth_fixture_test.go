package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// testAS is a small OAuth 2.1 authorization server on loopback, for tests
// only: metadata, dynamic registration, an authorization endpoint that
// approves at once (the scripted browser step follows its redirect), a
// token endpoint (authorization code with PKCE S256, refresh with
// rotation, client credentials) and revocation of every grant. The
// protected MCP server beside it is built with the go-sdk's
// RequireBearerToken and ProtectedResourceMetadataHandler.
type testAS struct {
	t   testing.TB
	srv *httptest.Server
	url string

	mu sync.Mutex
	// ttl is the lifetime of the next access tokens issued.
	ttl     time.Duration
	clients map[string]asClient
	codes   map[string]asCode
	access  map[string]asToken
	refresh map[string]string // refresh token -> grant
	revoked map[string]bool   // grant -> revoked
	counts  map[string]int
	issued  []string // every access and refresh token issued
	// secret is the client credentials client's secret (client "m2m").
	secret string
	// keyClient is the public key of client "m2m-key", which
	// authenticates with a private_key_jwt assertion; assertions are those
	// it sent, and jtis the IDs seen (an assertion is good once).
	keyClient  *ecdsa.PublicKey
	assertions []string
	jtis       map[string]bool
}

type asClient struct {
	redirects []string
}

type asCode struct {
	client, redirect, challenge, scope, resource string
}

type asToken struct {
	grant  string
	expiry time.Time
	scopes []string
}

func newTestAS(t testing.TB) *testAS {
	a := &testAS{t: t, ttl: time.Hour, clients: map[string]asClient{}, codes: map[string]asCode{}, access: map[string]asToken{},
		refresh: map[string]string{}, revoked: map[string]bool{}, counts: map[string]int{}, secret: "m2m-secret-" + randText()}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("/register", a.register)
	mux.HandleFunc("/authorize", a.authorize)
	mux.HandleFunc("/token", a.token)
	a.srv = httptest.NewServer(mux)
	a.url = a.srv.URL
	t.Cleanup(a.srv.Close)
	return a
}

func randText() string { return strings.ToLower(rand.Text()) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *testAS) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, &oauthex.AuthServerMeta{
		Issuer: a.url, AuthorizationEndpoint: a.url + "/authorize", TokenEndpoint: a.url + "/token",
		RegistrationEndpoint: a.url + "/register", ResponseTypesSupported: []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_post", "client_secret_basic", "private_key_jwt"},
		ScopesSupported:                   []string{"mcp:tools", "offline_access"},
	})
}

func (a *testAS) register(w http.ResponseWriter, r *http.Request) {
	var m oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "client-" + randText()
	a.mu.Lock()
	a.clients[id] = asClient{redirects: m.RedirectURIs}
	a.counts["register"]++
	a.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none",
		"grant_types": m.GrantTypes, "response_types": m.ResponseTypes})
}

// authorize approves at once: it is the person clicking "allow".
func (a *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	c, ok := a.clients[q.Get("client_id")]
	a.mu.Unlock()
	redirect := q.Get("redirect_uri")
	valid := ok && q.Get("response_type") == "code" && q.Get("code_challenge_method") == "S256" && q.Get("code_challenge") != ""
	if valid {
		valid = false
		for _, u := range c.redirects {
			valid = valid || u == redirect
		}
	}
	if !valid {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := "code-" + randText()
	a.mu.Lock()
	a.codes[code] = asCode{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), scope: q.Get("scope"), resource: q.Get("resource")}
	a.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (a *testAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	a.mu.Lock()
	defer a.mu.Unlock()
	gt := f.Get("grant_type")
	a.counts[gt]++
	var grant, scope string
	switch gt {
	case "authorization_code":
		c, ok := a.codes[f.Get("code")]
		delete(a.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		client := f.Get("client_id")
		if id, _, basic := r.BasicAuth(); basic {
			client = id // a pre-registered client with a secret
		}
		if !ok || c.client != client || c.redirect != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		grant, scope = "grant-"+randText(), c.scope
	case "refresh_token":
		g, ok := a.refresh[f.Get("refresh_token")]
		delete(a.refresh, f.Get("refresh_token")) // rotation: good once
		if !ok || a.revoked[g] {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		grant = g
	case "client_credentials":
		if f.Has("client_assertion_type") || f.Has("client_assertion") {
			a.assertions = append(a.assertions, f.Get("client_assertion"))
			claims, err := verifyAssertion(a.keyClient, f.Get("client_assertion"), a.url, "m2m-key", time.Now())
			_, _, basic := r.BasicAuth()
			if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || basic || f.Has("client_secret") || err != nil || a.jtis[claims.JTI] {
				writeJSON(w, 401, map[string]string{"error": "invalid_client"})
				return
			}
			if a.jtis == nil {
				a.jtis = map[string]bool{}
			}
			a.jtis[claims.JTI] = true
			grant = "grant-" + randText()
			break
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = f.Get("client_id"), f.Get("client_secret")
		}
		if id != "m2m" || secret != a.secret {
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
		grant = "grant-" + randText()
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+randText(), "rt-"+randText()
	a.access[at] = asToken{grant: grant, expiry: time.Now().Add(a.ttl), scopes: strings.Fields(scope)}
	out := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(a.ttl / time.Second)}
	a.issued = append(a.issued, at)
	if gt != "client_credentials" {
		a.refresh[rt] = grant
		a.issued = append(a.issued, rt)
		out["refresh_token"] = rt
	}
	writeJSON(w, 200, out)
}

// revokeAll ends every grant: its access and refresh tokens stop working.
func (a *testAS) revokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.access {
		a.revoked[t.grant] = true
	}
	for _, g := range a.refresh {
		a.revoked[g] = true
	}
}

func (a *testAS) setTTL(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ttl = d
}

func (a *testAS) count(grant string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.counts[grant]
}

func (a *testAS) tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.issued...)
}

// verify is the resource server's token check.
func (a *testAS) verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.access[tok]
	if !ok || a.revoked[t.grant] || time.Now().After(t.expiry) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: t.scopes, Expiration: t.expiry}, nil
}

// protectedUpstream is the harness's upstream tools behind OAuth: the
// go-sdk's bearer middleware and protected-resource metadata. It records
// each access token it accepted.
type protectedUpstream struct {
	*testUpstream
	srv      *httptest.Server
	mcpURL   string
	mu       sync.Mutex
	accepted []string
}

func newProtectedUpstream(t testing.TB, a *testAS) *protectedUpstream {
	u := newTestUpstream(t)
	p := &protectedUpstream{testUpstream: u}
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.mcpURL = p.srv.URL + "/mcp"
	prmURL := p.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: p.mcpURL, AuthorizationServers: []string{a.url}, ScopesSupported: []string{"mcp:tools"}}))
	inner := u.srv.Config.Handler
	verify := func(ctx context.Context, tok string, r *http.Request) (*auth.TokenInfo, error) {
		ti, err := a.verify(ctx, tok, r)
		if err == nil {
			p.mu.Lock()
			p.accepted = append(p.accepted, tok)
			p.mu.Unlock()
		}
		return ti, err
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(inner))
	return p
}

func (p *protectedUpstream) acceptedTokens() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.accepted...)
}

// scriptedBrowser follows an authorization URL as a browser would: the
// authorization server's redirect leads to the login's loopback listener.
func scriptedBrowser(t testing.TB, authURL string) error {
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("the redirect answered %s", resp.Status)
	}
	return nil
}

// assertionClaims are the claims of an RFC 7523 client assertion.
type assertionClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	Aud string `json:"aud"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	JTI string `json:"jti"`
}

// verifyAssertion checks a client assertion as an authorization server
// does, with crypto/ecdsa only: an ES256 compact JWS (a 64-byte r||s
// signature), iss = sub = client, aud = the authorization server, issued
// now, expiring within minutes, with a jti.
func verifyAssertion(pub *ecdsa.PublicKey, jws, aud, client string, now time.Time) (assertionClaims, error) {
	var c assertionClaims
	parts := strings.Split(jws, ".")
	if pub == nil || len(parts) != 3 {
		return c, errors.New("not a compact JWS")
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return c, err
	}
	var h struct{ Alg, Typ string }
	if err := json.Unmarshal(hb, &h); err != nil || h.Alg != "ES256" || h.Typ != "JWT" {
		return c, fmt.Errorf("header %s", hb)
	}
	if len(sig) != 64 {
		return c, fmt.Errorf("an ES256 signature is 64 bytes, got %d", len(sig))
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return c, errors.New("the signature does not verify")
	}
	if err := json.Unmarshal(cb, &c); err != nil {
		return c, err
	}
	switch {
	case c.Iss != client || c.Sub != client:
		return c, fmt.Errorf("iss %q sub %q, want %q", c.Iss, c.Sub, client)
	case c.Aud != aud:
		return c, fmt.Errorf("aud %q, want %q", c.Aud, aud)
	case c.JTI == "":
		return c, errors.New("no jti")
	case c.Iat > now.Unix()+5 || c.Iat < now.Unix()-60:
		return c, fmt.Errorf("iat %d is not now (%d)", c.Iat, now.Unix())
	case c.Exp <= now.Unix() || c.Exp > c.Iat+10*60:
		return c, fmt.Errorf("exp %d is not a few minutes after iat %d", c.Exp, c.Iat)
	}
	return c, nil
}
