package credentials

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/internal/token"
	"github.com/agentrt/agentrt/trace"
)

// KeyAlg is the JWS algorithm a client assertion is signed with.
type KeyAlg string

const (
	// ES256 is ECDSA on P-256 with SHA-256; the signature is r||s.
	ES256 KeyAlg = "ES256"
	// RS256 is RSASSA-PKCS1-v1_5 with SHA-256, for an RSA key of at least
	// 2048 bits.
	RS256 KeyAlg = "RS256"
)

// jwtBearerAssertion is RFC 7523's client_assertion_type.
const jwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime is how long a client assertion is valid: one token
// request, with room for clock skew.
const assertionLifetime = 3 * time.Minute

// PrivateKeyRef is a client_credentials client that authenticates with a
// signed JWT (private_key_jwt, RFC 7523 §2.2) instead of a secret: the
// private key lives in an owner-only PEM file, read through
// files.ReadSecret when the configuration is loaded (to refuse a bad key
// early) and again when the server is connected. The configuration holds
// only the path.
type PrivateKeyRef struct {
	File string
	// Alg is the key's algorithm: ES256 for an EC P-256 key, RS256 for an
	// RSA key; the configuration may leave it out.
	Alg KeyAlg
	// KeyID, when set, is the JWS header's kid.
	KeyID string
}

// FileKey is a PrivateKeyRef's JSON form.
type FileKey struct {
	File  string `json:"file"`
	Alg   string `json:"alg"`
	KeyID string `json:"kid"`
}

// Resolve checks the reference and reads the key once, to refuse a bad
// one early; rel makes the path absolute.
func (fk FileKey) Resolve(field string, rel func(string) string) (*PrivateKeyRef, error) {
	if fk.File == "" {
		return nil, bad(field+".file", "must name an owner-only PEM file holding the client's private key")
	}
	switch KeyAlg(fk.Alg) {
	case "", ES256, RS256:
	default:
		return nil, bad(field+".alg", "must be ES256 or RS256, got %q", trace.Sanitize(fk.Alg))
	}
	if strings.ContainsFunc(fk.KeyID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, bad(field+".kid", "must not hold a control character")
	}
	k := &PrivateKeyRef{File: rel(fk.File), Alg: KeyAlg(fk.Alg), KeyID: fk.KeyID}
	_, alg, err := k.load()
	if err != nil {
		return nil, bad(field+".file", "%s", err)
	}
	k.Alg = alg
	return k, nil
}

// load reads and parses the key. Its errors name the file and what is
// wrong with it, never a byte of the key.
func (k *PrivateKeyRef) load() (crypto.Signer, KeyAlg, error) {
	b, err := files.ReadSecret(k.File, MaxSecretFile)
	if err != nil {
		return nil, "", fmt.Errorf("%s cannot be read: %s", k.File, trace.Sanitize(err.Error()))
	}
	block, rest := pem.Decode(b)
	if block == nil || strings.TrimSpace(string(rest)) != "" {
		return nil, "", fmt.Errorf("%s must hold exactly one PEM private key block", k.File)
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, "", fmt.Errorf("%s holds a PEM %q block, not an unencrypted private key (PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)", k.File, trace.Sanitize(block.Type))
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s holds a %s block that does not parse as a private key", k.File, block.Type)
	}
	var alg KeyAlg
	switch key := key.(type) {
	case *ecdsa.PrivateKey:
		if key.Curve != elliptic.P256() {
			return nil, "", fmt.Errorf("%s holds an EC key on %s; ES256 needs P-256", k.File, key.Curve.Params().Name)
		}
		alg = ES256
	case *rsa.PrivateKey:
		if key.N.BitLen() < 2048 {
			return nil, "", fmt.Errorf("%s holds a %d-bit RSA key; RS256 needs at least 2048 bits", k.File, key.N.BitLen())
		}
		alg = RS256
	default:
		return nil, "", fmt.Errorf("%s holds a %T key; only EC P-256 (ES256) and RSA (RS256) keys sign a client assertion", k.File, key)
	}
	if k.Alg != "" && k.Alg != alg {
		return nil, "", fmt.Errorf("%s holds a key for %s, not the configured alg %s", k.File, alg, k.Alg)
	}
	return key.(crypto.Signer), alg, nil
}

// assertionSigner makes RFC 7523 client assertions: a new one, with its
// own jti, for every token request.
type assertionSigner struct {
	clientID string
	kid      string
	alg      KeyAlg
	key      crypto.Signer
	now      func() time.Time
}

// assertion is a compact JWS with iss = sub = the client ID and aud =
// the authorization server.
func (s *assertionSigner) assertion(aud string) (string, error) {
	now := s.now()
	header := map[string]string{"alg": string(s.alg), "typ": "JWT"}
	if s.kid != "" {
		header["kid"] = s.kid
	}
	claims := map[string]any{"iss": s.clientID, "sub": s.clientID, "aud": aud, "iat": now.Unix(),
		"exp": now.Add(assertionLifetime).Unix(), "jti": token.URL(16)}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch key := s.key.(type) {
	case *ecdsa.PrivateKey:
		r, ss, err := ecdsa.Sign(rand.Reader, key, sum[:])
		if err != nil {
			return "", err
		}
		// JWS (RFC 7518 §3.4): r and s, each 32 bytes big-endian, not ASN.1.
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		ss.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		if sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:]); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("no signer for a %T key", key)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// keyClientCredentials is the OAuthHandler of a client_credentials server
// whose client authenticates with a private key.
//
// It is our own small handler rather than a wrapper of the SDK's
// extauth.ClientCredentialsHandler: that handler (go-sdk v1.8.0) refuses
// a configuration without a client secret and builds its
// clientcredentials.Config inside Authorize with the secret and no
// EndpointParams, so the only way to put an assertion in its requests
// would be to rewrite them in transit, and a static parameter would send
// the same assertion (one jti) on every request. The protocol is still
// the SDK's and x/oauth2's: discovery through oauthex.ParseWWWAuthenticate,
// oauthex.GetProtectedResourceMetadata and auth.GetAuthServerMetadata in
// the order the SDK's handler uses, the exchange through
// clientcredentials.Config with AuthStyleInParams and the assertion in
// EndpointParams, a new Config (and a new assertion) for each token
// request. The token stays in memory, as with a secret.
type keyClientCredentials struct {
	server string
	// issuer is the authorization server the client is registered with;
	// no assertion is signed for another.
	issuer string
	signer *assertionSigner
	client *http.Client

	mu      sync.Mutex
	src     oauth2.TokenSource
	granted map[string][]string // issuer -> scopes granted, for step-up
}

var _ auth.OAuthHandler = (*keyClientCredentials)(nil)

func newKeyClientCredentials(server, issuer, clientID string, k *PrivateKeyRef, client *http.Client, now func() time.Time) (*keyClientCredentials, error) {
	key, alg, err := k.load()
	if err != nil {
		return nil, fmt.Errorf("proxy: server %q: oauth.private_key: %w", server, err)
	}
	if now == nil {
		now = time.Now
	}
	return &keyClientCredentials{server: server, issuer: issuer, client: client, granted: map[string][]string{},
		signer: &assertionSigner{clientID: clientID, kid: k.KeyID, alg: alg, key: key, now: now}}, nil
}

func (h *keyClientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.src, nil
}

// Authorize discovers the authorization server and obtains a token. The
// context it keeps for later exchanges is not cancelled with the request
// that needed it.
func (h *keyClientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	ctx = context.WithoutCancel(ctx)
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return fmt.Errorf("proxy: server %q: the WWW-Authenticate header does not parse: %v", h.server, err)
	}
	prm, err := h.resourceMetadata(ctx, challenges, req.URL.String())
	if err != nil {
		return err
	}
	if err := checkIssuer(h.server, h.issuer, prm.AuthorizationServers[0]); err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.client)
	if err != nil {
		return fmt.Errorf("proxy: server %q: the authorization server metadata: %w", h.server, err)
	}
	if asm == nil {
		// The 2025-03-26 fallback, as the SDK's handlers do.
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], TokenEndpoint: prm.AuthorizationServers[0] + "/token"}
	}
	if len(asm.TokenEndpointAuthMethodsSupported) > 0 && !slices.Contains(asm.TokenEndpointAuthMethodsSupported, "private_key_jwt") {
		return fmt.Errorf("proxy: server %q: the authorization server does not accept private_key_jwt (it lists %s)", h.server,
			trace.Sanitize(strings.Join(asm.TokenEndpointAuthMethodsSupported, ", ")))
	}
	scopes := scopesOf(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sc := range h.granted[asm.Issuer] {
		if !slices.Contains(scopes, sc) {
			scopes = append(slices.Clip(scopes), sc)
		}
	}
	src := &assertingSource{ctx: context.WithValue(ctx, oauth2.HTTPClient, h.client), signer: h.signer,
		aud: asm.Issuer, tokenURL: asm.TokenEndpoint, scopes: scopes}
	tok, err := src.Token()
	if err != nil {
		h.src = nil
		return fmt.Errorf("proxy: server %q: the client credentials token request failed: %s", h.server, tokenFailure(err))
	}
	h.src = oauth2.ReuseTokenSource(tok, src)
	if got, ok := tok.Extra("scope").(string); ok {
		h.granted[asm.Issuer] = strings.Fields(got)
	} else {
		h.granted[asm.Issuer] = scopes
	}
	return nil
}

// resourceMetadata finds the protected-resource metadata where the SDK's
// handlers look (the challenge's resource_metadata, the endpoint's path,
// the root), falling back to the origin as the authorization server.
func (h *keyClientCredentials) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, endpoint string) (*oauthex.ProtectedResourceMetadata, error) {
	return resourceMetadata(ctx, h.server, h.client, challenges, endpoint)
}

// resourceMetadata is keyClientCredentials.resourceMetadata for any
// handler: the issuer guard (issuer.go) reads it before a secret goes
// anywhere.
func resourceMetadata(ctx context.Context, server string, client *http.Client, challenges []oauthex.Challenge, endpoint string) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("proxy: server %q: the endpoint does not parse: %v", server, err)
	}
	type try struct{ meta, resource string }
	var tries []try
	for _, c := range challenges {
		if m := c.Params["resource_metadata"]; m != "" {
			tries = append(tries, try{m, endpoint})
			break
		}
	}
	m := *u
	m.RawQuery, m.Fragment = "", ""
	m.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	tries = append(tries, try{m.String(), endpoint})
	root := m
	root.Path = "/.well-known/oauth-protected-resource"
	origin := m
	origin.Path = ""
	tries = append(tries, try{root.String(), origin.String()})
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.meta, t.resource, client)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("proxy: server %q: its protected-resource metadata names no authorization server", server)
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{origin.String()}, Resource: endpoint}, nil
}

// scopesOf are the scopes a Bearer challenge asks for.
func scopesOf(challenges []oauthex.Challenge) []string {
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// assertingSource is one client_credentials exchange per Token call, each
// with a new assertion; oauth2.ReuseTokenSource calls it only when the
// token it holds expired.
type assertingSource struct {
	ctx      context.Context
	signer   *assertionSigner
	aud      string
	tokenURL string
	scopes   []string
}

func (s *assertingSource) Token() (*oauth2.Token, error) {
	a, err := s.signer.assertion(s.aud)
	if err != nil {
		return nil, errors.New("the client assertion could not be signed")
	}
	cfg := &clientcredentials.Config{ClientID: s.signer.clientID, TokenURL: s.tokenURL, Scopes: s.scopes,
		AuthStyle:      oauth2.AuthStyleInParams,
		EndpointParams: url.Values{"client_assertion_type": {jwtBearerAssertion}, "client_assertion": {a}}}
	return cfg.Token(s.ctx)
}

// tokenFailure says why a token request failed in one line: the error
// code and description the authorization server sent, or its status,
// never the body it answered with.
func tokenFailure(err error) string {
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re) && re.ErrorCode != "":
		why := "the authorization server answered " + strconv.Quote(trace.Sanitize(re.ErrorCode))
		if re.ErrorDescription != "" {
			why += " (" + trace.Sanitize(re.ErrorDescription) + ")"
		}
		return why
	case errors.As(err, &re) && re.Response != nil:
		return "the authorization server answered " + trace.Sanitize(re.Response.Status)
	}
	return trace.Sanitize(err.Error())
}
