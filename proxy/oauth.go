package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/trace"
)

// ErrLoginNeeded marks an OAuth server whose stored login is missing or no
// longer accepted: an operator runs `agentrt-proxy login SERVER`.
var ErrLoginNeeded = errors.New("proxy: the server needs a login")

// LoginNeededError names the server and why. It also matches
// mcp.ErrNotAuthorized, so a call it stops is recorded as never sent.
type LoginNeededError struct {
	Server string
	Reason string
}

func (e *LoginNeededError) Error() string {
	return fmt.Sprintf("proxy: server %q needs a login (%s): run `agentrt-proxy login %s`", e.Server, e.Reason, e.Server)
}

// Is matches ErrLoginNeeded and mcp.ErrNotAuthorized.
func (e *LoginNeededError) Is(target error) bool {
	return target == ErrLoginNeeded || target == mcp.ErrNotAuthorized
}

// GrantType is how an OAuth server's tokens are obtained.
type GrantType string

const (
	// GrantAuthorizationCode: a person logs in once with `agentrt-proxy
	// login`; the proxy refreshes the tokens it stored.
	GrantAuthorizationCode GrantType = "authorization_code"
	// GrantClientCredentials: machine to machine, a pre-registered client
	// ID with a secret or a private key; no login.
	GrantClientCredentials GrantType = "client_credentials"
)

// OAuthConfig is a server's OAuth 2.1 entry. The go-sdk does the protocol:
// discovery from the protected-resource and authorization-server
// metadata, PKCE, the client ID metadata document, pre-registration or
// dynamic registration, scopes from the challenge or the metadata.
type OAuthConfig struct {
	Grant GrantType
	// Tokens is the owner-only file login writes and the proxy reads and
	// rewrites on refresh. Default: <server>.oauth.json beside the
	// configuration.
	Tokens string
	// ClientID and ClientSecret are a pre-registered client; the secret
	// is a reference. Empty means dynamic registration (or the metadata
	// document when ClientMetadataURL is set and the server supports it).
	ClientID     string
	ClientSecret *SecretRef
	// Issuer is the authorization server the client is registered with;
	// required with ClientSecret or PrivateKey (issuer.go). No secret,
	// key or assertion goes to any other.
	Issuer string
	// PrivateKey, for client_credentials only and instead of ClientSecret,
	// authenticates the client with a signed JWT (private_key_jwt).
	PrivateKey *PrivateKeyRef
	// ClientMetadataURL is an https client ID metadata document URL.
	ClientMetadataURL string
	// Scopes, when set, replace the scopes discovered from the challenge or
	// the metadata.
	Scopes []string
	// RedirectPort is the loopback port login listens on; zero picks one.
	// A pre-registered client needs the port it registered.
	RedirectPort int
}

type fileOAuth struct {
	Grant             string      `json:"grant"`
	Tokens            string      `json:"tokens"`
	ClientID          string      `json:"client_id"`
	ClientSecret      *fileSecret `json:"client_secret"`
	Issuer            string      `json:"issuer"`
	PrivateKey        *fileKey    `json:"private_key"`
	ClientMetadataURL string      `json:"client_metadata_url"`
	Scopes            []string    `json:"scopes"`
	RedirectPort      int         `json:"redirect_port"`
}

func (fo *fileOAuth) resolve(field string, rel func(string) string, s *ServerConfig) (*OAuthConfig, error) {
	o := &OAuthConfig{Grant: GrantType(fo.Grant), ClientID: fo.ClientID, ClientMetadataURL: fo.ClientMetadataURL,
		Scopes: fo.Scopes, RedirectPort: fo.RedirectPort}
	if s.Endpoint == "" || s.SSE {
		return nil, bad(field, "needs a streamable HTTP endpoint (the SDK's SSE client transport takes no OAuth)")
	}
	switch o.Grant {
	case "":
		o.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantClientCredentials:
	default:
		return nil, bad(field+".grant", "must be authorization_code or client_credentials, got %q", trace.Sanitize(fo.Grant))
	}
	if fo.ClientSecret != nil {
		r, err := fo.ClientSecret.resolve(field+".client_secret", rel)
		if err != nil {
			return nil, err
		}
		if r.Prefix != "" {
			return nil, bad(field+".client_secret.prefix", "is not used for a client secret")
		}
		o.ClientSecret = &r
		if o.ClientID == "" {
			return nil, bad(field+".client_secret", "needs client_id")
		}
	}
	if fo.PrivateKey != nil {
		if o.Grant != GrantClientCredentials {
			return nil, bad(field+".private_key", "is used only with grant client_credentials")
		}
		if o.ClientSecret != nil {
			return nil, bad(field, "must set exactly one of client_secret and private_key, not both")
		}
		if o.ClientID == "" {
			return nil, bad(field+".private_key", "needs client_id")
		}
		k, err := fo.PrivateKey.resolve(field+".private_key", rel)
		if err != nil {
			return nil, err
		}
		o.PrivateKey = k
	}
	if o.Grant == GrantClientCredentials && (o.ClientID == "" || (o.ClientSecret == nil && o.PrivateKey == nil)) {
		return nil, bad(field, "client_credentials needs client_id and exactly one of client_secret and private_key")
	}
	issuer, err := resolveIssuer(field, fo.Issuer, o.ClientSecret != nil || o.PrivateKey != nil)
	if err != nil {
		return nil, err
	}
	o.Issuer = issuer
	if o.ClientMetadataURL != "" {
		u, err := url.Parse(o.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" {
			return nil, bad(field+".client_metadata_url", "must be an https URL with a path")
		}
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		return nil, bad(field+".redirect_port", "must be a port number, got %d", o.RedirectPort)
	}
	o.Tokens = rel(fo.Tokens)
	if fo.Tokens == "" {
		o.Tokens = rel(s.Name + ".oauth.json")
	}
	return o, nil
}

// storedTokens is a token file: what refreshing needs, bound to the
// endpoint it was obtained for. It holds secrets and is owner-only.
type storedTokens struct {
	Server       string           `json:"server"`
	Endpoint     string           `json:"endpoint"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthURL      string           `json:"auth_url"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	Scopes       []string         `json:"scopes,omitempty"`
	// StepUp are scopes the server asked for (403 insufficient_scope)
	// beyond the login's: the next login requests them too.
	StepUp []string      `json:"step_up,omitempty"`
	Token  *oauth2.Token `json:"token"`
}

func readTokens(path string) (*storedTokens, error) {
	b, err := files.ReadSecret(path, maxSecretFile)
	if err != nil {
		return nil, err
	}
	var st storedTokens
	if err := decodeStrict(b, &st); err != nil {
		return nil, fmt.Errorf("%s is not a token file: %v", path, err)
	}
	if st.Token == nil || st.Token.AccessToken == "" || st.TokenURL == "" || st.ClientID == "" {
		return nil, fmt.Errorf("%s holds no usable token", path)
	}
	return &st, nil
}

func (st *storedTokens) write(path string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(b, '\n'), 0o600)
}

// oauthHTTPClient is the client the SDK's OAuth code uses for discovery,
// registration and tokens: no redirect followed, a deadline on each
// exchange.
func oauthHTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return &mcp.RedirectError{Host: req.URL.Host}
	}}
}

// runtimeOAuth is the handler the proxy connects an OAuth server with.
func (s ServerConfig) runtimeOAuth(opts DialOptions, base *http.Client) (auth.OAuthHandler, error) {
	o := s.OAuth
	if o.Grant == GrantClientCredentials && o.PrivateKey != nil {
		h, err := newKeyClientCredentials(s.Name, o.Issuer, o.ClientID, o.PrivateKey, oauthHTTPClient(), nil)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	if o.Grant == GrantClientCredentials {
		secret, err := o.ClientSecret.value(s.Name, "oauth.client_secret", opts.Lookup)
		if err != nil {
			return nil, err
		}
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
			HTTPClient:  oauthHTTPClient(),
		})
		if err != nil {
			return nil, fmt.Errorf("proxy: server %q: oauth: %w", s.Name, err)
		}
		return issuerGuard{OAuthHandler: detached{h}, server: s.Name, issuer: o.Issuer, client: oauthHTTPClient()}, nil
	}
	l := &storedLogin{server: s.Name, endpoint: s.Endpoint, path: o.Tokens, onNeeded: opts.OnLoginNeeded}
	if o.ClientSecret != nil {
		l.secret = func() (string, error) { return o.ClientSecret.value(s.Name, "oauth.client_secret", opts.Lookup) }
	}
	l.mu.Lock()
	err := l.reloadLocked(true)
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return l, nil
}

// detached runs the SDK handler's Authorize on a context that is not
// cancelled with the request that needed it: the client credentials token
// source the SDK builds keeps that context for every later exchange.
type detached struct{ auth.OAuthHandler }

func (d detached) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	return d.OAuthHandler.Authorize(context.WithoutCancel(ctx), req, resp)
}

// storedLogin is the runtime OAuthHandler of an authorization-code
// server: the tokens login stored, refreshed through x/oauth2 (as the SDK
// does) and written back, re-read when a new login replaces the file. It
// never starts a login itself: a 401 it cannot answer with a refresh
// marks the server as needing one.
type storedLogin struct {
	server, endpoint, path string
	secret                 func() (string, error)
	onNeeded               func(string)

	mu     sync.Mutex
	stamp  fileStamp
	cfg    *oauth2.Config
	saved  *storedTokens
	src    oauth2.TokenSource
	failed string // why the login no longer works; "" while it does
}

type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}, false
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}, true
}

// reloadLocked reads the token file when it changed since it was read
// (or always, when force is set).
func (l *storedLogin) reloadLocked(force bool) error {
	st, ok := stampOf(l.path)
	if !ok {
		l.src, l.cfg = nil, nil
		return &LoginNeededError{Server: l.server, Reason: "no login yet"}
	}
	if !force && st == l.stamp && l.cfg != nil {
		return nil
	}
	l.stamp = st
	t, err := readTokens(l.path)
	if err != nil {
		l.src, l.cfg = nil, nil
		return &LoginNeededError{Server: l.server, Reason: "the token file cannot be read: " + trace.Sanitize(err.Error())}
	}
	if t.Server != l.server || t.Endpoint != l.endpoint {
		l.src, l.cfg = nil, nil
		return &LoginNeededError{Server: l.server, Reason: "the tokens were obtained for another server or endpoint"}
	}
	secret := t.ClientSecret
	if l.secret != nil {
		if secret, err = l.secret(); err != nil {
			return err
		}
	}
	l.cfg = &oauth2.Config{ClientID: t.ClientID, ClientSecret: secret, Scopes: t.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: t.AuthURL, TokenURL: t.TokenURL, AuthStyle: t.AuthStyle}}
	l.saved = t
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, oauthHTTPClient())
	l.src = l.cfg.TokenSource(ctx, t.Token)
	l.failed = ""
	return nil
}

// usable reports whether the login works, as far as the proxy knows: a
// token file rewritten since a failure is read again.
func (l *storedLogin) usable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadLocked(false); err != nil {
		return false
	}
	return l.failed == "" && l.src != nil
}

// TokenSource is the login itself; its Token refreshes as needed.
func (l *storedLogin) TokenSource(context.Context) (oauth2.TokenSource, error) { return l, nil }

// Token returns a valid access token, refreshing and storing it when the
// stored one expired; a refresh the server refuses marks the login
// failed.
func (l *storedLogin) Token() (*oauth2.Token, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadLocked(false); err != nil {
		var le *LoginNeededError
		if errors.As(err, &le) {
			return nil, l.failLocked(le.Reason)
		}
		return nil, err
	}
	if l.failed != "" {
		return nil, &LoginNeededError{Server: l.server, Reason: l.failed}
	}
	t, err := l.src.Token()
	if err != nil {
		return nil, l.failLocked("the token could not be refreshed")
	}
	l.keepLocked(t)
	return t, nil
}

// keepLocked writes a refreshed token back (a rotated refresh token is
// good only once).
func (l *storedLogin) keepLocked(t *oauth2.Token) {
	old := l.saved.Token
	if old != nil && t.AccessToken == old.AccessToken && t.RefreshToken == old.RefreshToken {
		return
	}
	next := *l.saved
	tok := *t
	if tok.RefreshToken == "" && old != nil {
		tok.RefreshToken = old.RefreshToken
	}
	next.Token = &tok
	if err := next.write(l.path); err != nil {
		// The token works for this process; the next start refreshes again.
		return
	}
	l.saved = &next
	l.stamp, _ = stampOf(l.path)
}

func (l *storedLogin) failLocked(reason string) error {
	if l.failed == "" {
		l.failed = reason
		if l.onNeeded != nil {
			l.onNeeded(l.server)
		}
	}
	return &LoginNeededError{Server: l.server, Reason: reason}
}

// Authorize answers a 401 (or a 403 asking for more scope) by refreshing
// once; when the server still refuses, or the refresh is refused, the
// login is marked failed and the request is never sent again on it.
func (l *storedLogin) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden {
		insufficient := slices.ContainsFunc(challenges, func(c oauthex.Challenge) bool { return c.Params["error"] == "insufficient_scope" })
		if !insufficient {
			// Not about authorization: the retry answers as the server does.
			return nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.rememberStepUpLocked(challenges)
		return l.failLocked("the server asks for more scope than the login granted")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != "" {
		return &LoginNeededError{Server: l.server, Reason: l.failed}
	}
	sent := bearerOf(req)
	if l.saved != nil && l.saved.Token != nil && sent == l.saved.Token.AccessToken && l.saved.Token.RefreshToken != "" {
		// The server refused a token we think valid: refresh once.
		expired := *l.saved.Token
		expired.Expiry = time.Unix(1, 0)
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, oauthHTTPClient())
		if t, err := l.cfg.TokenSource(ctx, &expired).Token(); err == nil {
			l.src = l.cfg.TokenSource(ctx, t)
			l.keepLocked(t)
			return nil
		}
	} else if l.saved != nil && l.saved.Token != nil && sent != l.saved.Token.AccessToken {
		// A token newer than the one refused is already stored: retry.
		return nil
	}
	return l.failLocked("the server refused the stored login")
}

// rememberStepUpLocked writes the scopes a 403 challenge asks for into the
// token file, for the next login to request.
func (l *storedLogin) rememberStepUpLocked(challenges []oauthex.Challenge) {
	if l.saved == nil {
		return
	}
	var want []string
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			want = append(want, strings.Fields(c.Params["scope"])...)
		}
	}
	next := *l.saved
	added := false
	for _, sc := range want {
		if !slices.Contains(next.StepUp, sc) && !slices.Contains(next.Scopes, sc) {
			next.StepUp = append(slices.Clone(next.StepUp), sc)
			added = true
		}
	}
	if !added || next.write(l.path) != nil {
		return
	}
	l.saved = &next
	l.stamp, _ = stampOf(l.path)
}

func bearerOf(req *http.Request) string {
	const p = "Bearer "
	h := req.Header.Get("Authorization")
	if len(h) > len(p) && http.CanonicalHeaderKey(h[:6]) == "Bearer" {
		return h[len(p):]
	}
	return ""
}

// LoginOptions configure Login.
type LoginOptions struct {
	// Stderr receives the authorization URL and progress; never a token.
	Stderr io.Writer
	// Open, when set, is called with the authorization URL (a browser).
	Open func(url string) error
	// Lookup reads the environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// Timeout bounds the whole login; zero means 10 minutes.
	Timeout time.Duration
}

// Login runs the OAuth authorization-code flow for one server with the
// go-sdk's AuthorizationCodeHandler and stores the tokens in the server's
// owner-only token file. The redirect is received on a loopback listener
// that exists only while Login runs. It returns the token file's path.
func Login(ctx context.Context, cfg *Config, server string, opts LoginOptions) (string, error) {
	var s *ServerConfig
	for i := range cfg.Servers {
		if cfg.Servers[i].Name == server {
			s = &cfg.Servers[i]
		}
	}
	if s == nil {
		return "", fmt.Errorf("proxy: no server named %q in %s", trace.Sanitize(server), cfg.Path)
	}
	return LoginServer(ctx, *s, opts)
}

// LoginServer is Login for one server entry, which need not be in a
// configuration file yet (init logs in before it writes one).
func LoginServer(ctx context.Context, srv ServerConfig, opts LoginOptions) (string, error) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	s := &srv
	if s.OAuth == nil {
		return "", fmt.Errorf("proxy: server %q has no oauth entry; nothing to log in to", s.Name)
	}
	o := s.OAuth
	if o.Grant == GrantClientCredentials {
		return "", fmt.Errorf("proxy: server %q uses client credentials; the proxy obtains its tokens itself, no login is needed", s.Name)
	}
	if err := checkPrivate(o.Tokens, true); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	sec, err := s.resolveSecrets(opts.Lookup)
	if err != nil {
		return "", err
	}
	var secret string
	if o.ClientSecret != nil {
		if secret, err = o.ClientSecret.value(s.Name, "oauth.client_secret", opts.Lookup); err != nil {
			return "", err
		}
	}
	cb, err := listenCallback(o.RedirectPort)
	if err != nil {
		return "", fmt.Errorf("proxy: login: the loopback redirect listener: %w", err)
	}
	defer cb.close()

	var got *storedTokens
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cb.url,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{cb.url}, ClientName: "agentrt-proxy", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
		RequestRefreshToken: true,
		Client:              oauthHTTPClient(),
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			fmt.Fprintf(opts.Stderr, "agentrt-proxy login: open this URL in a browser to log in to %s:\n%s\n", s.Name, a.URL)
			if opts.Open != nil {
				if err := opts.Open(a.URL); err != nil {
					fmt.Fprintf(opts.Stderr, "agentrt-proxy login: the browser did not open (%s); open the URL yourself\n", trace.Sanitize(err.Error()))
				}
			}
			return cb.wait(ctx)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			st := &storedTokens{Server: s.Name, Endpoint: s.Endpoint, ClientID: c.ClientID, AuthURL: c.Endpoint.AuthURL,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes, Token: t}
			if o.ClientSecret == nil {
				// A secret from dynamic registration lives only here.
				st.ClientSecret = c.ClientSecret
			}
			got = st
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if o.ClientID != "" {
		pc := &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer}
		if secret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		hc.PreregisteredClient = pc
		hc.DynamicClientRegistrationConfig = nil
	}
	if o.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	// Scopes a server asked for at run time (a step-up) are requested with
	// the discovered or configured ones.
	var stepUp []string
	if old, err := readTokens(o.Tokens); err == nil && old.Server == s.Name && old.Endpoint == s.Endpoint {
		stepUp = old.StepUp
	}
	hc.ScopeFilter = func(discovered []string) []string {
		out := slices.Clone(discovered)
		if len(o.Scopes) > 0 {
			out = slices.Clone(o.Scopes)
		}
		for _, sc := range stepUp {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
		return out
	}
	ah, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return "", fmt.Errorf("proxy: server %q: oauth: %w", s.Name, err)
	}
	h := issuerGuard{OAuthHandler: ah, server: s.Name, issuer: o.Issuer, client: oauthHTTPClient()}
	if err := connectOnce(ctx, s, HeaderClient(s.Endpoint, sec.headers), h); err != nil {
		return "", fmt.Errorf("proxy: login to %s: %w", s.Name, err)
	}
	if got == nil {
		return "", fmt.Errorf("proxy: server %q accepted the connection without asking for authorization; no login is needed", s.Name)
	}
	if err := got.write(o.Tokens); err != nil {
		return "", err
	}
	return o.Tokens, nil
}

// loginCallback is the loopback listener the authorization server
// redirects the browser to.
type loginCallback struct {
	url  string
	srv  *http.Server
	res  chan callbackResult
	once sync.Once
}

type callbackResult struct {
	r   *auth.AuthorizationResult
	err error
}

func listenCallback(port int) (*loginCallback, error) {
	ln, err := listenLoopback(port)
	if err != nil {
		return nil, err
	}
	cb := &loginCallback{url: fmt.Sprintf("http://%s/callback", ln.Addr()), res: make(chan callbackResult, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var res callbackResult
		if e := q.Get("error"); e != "" {
			res.err = fmt.Errorf("the authorization server answered %q: %s", trace.Sanitize(e), trace.Sanitize(q.Get("error_description")))
		} else if q.Get("code") == "" {
			http.Error(w, "no authorization code in this request", http.StatusBadRequest)
			return
		} else {
			res.r = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		}
		delivered := false
		cb.once.Do(func() { cb.res <- res; delivered = true })
		if !delivered {
			http.Error(w, "this login already received its answer", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if res.err != nil {
			io.WriteString(w, "agentrt-proxy: the login failed; see the terminal.\n")
			return
		}
		io.WriteString(w, "agentrt-proxy: logged in; you may close this page.\n")
	})
	cb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go cb.srv.Serve(ln)
	return cb, nil
}

func (cb *loginCallback) wait(ctx context.Context) (*auth.AuthorizationResult, error) {
	select {
	case r := <-cb.res:
		return r.r, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer from the browser: %w", ctx.Err())
	}
}

func (cb *loginCallback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = cb.srv.Shutdown(ctx)
}

// listenLoopback listens on 127.0.0.1 only.
func listenLoopback(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// connectOnce initializes a session with the server through the SDK's
// streamable client transport and its OAuth handler, then closes it: the
// handler's flow runs on the first 401.
func connectOnce(ctx context.Context, s *ServerConfig, hc *http.Client, h auth.OAuthHandler) error {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error { return &mcp.RedirectError{Host: req.URL.Host} }
	client := sdk.NewClient(&sdk.Implementation{Name: "agentrt-proxy-login", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.Endpoint, HTTPClient: c, OAuthHandler: h, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	return cs.Close()
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
