package credentials

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/trace"
)

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

// Login runs the OAuth authorization-code flow for server name at
// endpoint, whose entry is o, with the go-sdk's AuthorizationCodeHandler,
// and stores the tokens in the server's owner-only token file. client,
// when not nil, carries the server's headers (HeaderClient). The redirect
// is received on a loopback listener that exists only while Login runs.
// It returns the token file's path. The caller has set opts' defaults and
// bounded ctx by opts.Timeout.
func Login(ctx context.Context, name, endpoint string, client *http.Client, o *OAuthConfig, opts LoginOptions) (string, error) {
	var secret string
	if o.ClientSecret != nil {
		var err error
		if secret, err = o.ClientSecret.value(name, "oauth.client_secret", opts.Lookup); err != nil {
			return "", err
		}
	}
	cb, err := listenCallback(o.RedirectPort)
	if err != nil {
		return "", fmt.Errorf("proxy: login: the loopback redirect listener: %w", err)
	}
	defer cb.close()
	var got *Tokens
	hc := codeHandlerConfig(name, endpoint, o, opts, cb, func(t *Tokens) { got = t })
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
	hc.ScopeFilter = scopeFilter(name, endpoint, o)
	ah, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return "", fmt.Errorf("proxy: server %q: oauth: %w", name, err)
	}
	h := issuerGuard{OAuthHandler: ah, server: name, issuer: o.Issuer, client: HTTPClient(endpoint)}
	if err := ConnectOnce(ctx, endpoint, client, h); err != nil {
		return "", fmt.Errorf("proxy: login to %s: %w", name, err)
	}
	if got == nil {
		return "", fmt.Errorf("proxy: server %q accepted the connection without asking for authorization; no login is needed", name)
	}
	if err := got.write(o.Tokens); err != nil {
		return "", err
	}
	return o.Tokens, nil
}

// codeHandlerConfig is the SDK handler's configuration for a login whose
// browser comes back to cb: dynamic registration unless the entry names a
// client, and the tokens handed to keep rather than to a token source.
func codeHandlerConfig(name, endpoint string, o *OAuthConfig, opts LoginOptions, cb *loginCallback, keep func(*Tokens)) *auth.AuthorizationCodeHandlerConfig {
	return &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cb.url,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{cb.url}, ClientName: "agentrt-proxy", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
		RequestRefreshToken: true,
		Client:              HTTPClient(endpoint),
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			fmt.Fprintf(opts.Stderr, "agentrt-proxy login: open this URL in a browser to log in to %s:\n%s\n", name, a.URL)
			if opts.Open != nil {
				if err := opts.Open(a.URL); err != nil {
					fmt.Fprintf(opts.Stderr, "agentrt-proxy login: the browser did not open (%s); open the URL yourself\n", trace.Sanitize(err.Error()))
				}
			}
			return cb.wait(ctx)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			st := &Tokens{Server: name, Endpoint: endpoint, ClientID: c.ClientID, AuthURL: c.Endpoint.AuthURL,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes, Token: t}
			if o.ClientSecret == nil {
				// A secret from dynamic registration lives only here.
				st.ClientSecret = c.ClientSecret
			}
			keep(st)
			return oauth2.StaticTokenSource(t), nil
		},
	}
}

// scopeFilter requests the configured scopes (or the discovered ones) and
// the scopes a server asked for at run time (a step-up), which the token
// file of an earlier login of the same server remembers.
func scopeFilter(name, endpoint string, o *OAuthConfig) func([]string) []string {
	var stepUp []string
	if old, err := ReadTokens(o.Tokens); err == nil && old.Server == name && old.Endpoint == endpoint {
		stepUp = old.StepUp
	}
	return func(discovered []string) []string {
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

// ConnectOnce initializes a session with the server at endpoint through
// the SDK's streamable client transport and its OAuth handler, then
// closes it: the handler's flow runs on the first 401.
func ConnectOnce(ctx context.Context, endpoint string, hc *http.Client, h auth.OAuthHandler) error {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error { return &mcp.RedirectError{Host: req.URL.Host} }
	client := sdk.NewClient(&sdk.Implementation{Name: "agentrt-proxy-login", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: c, OAuthHandler: h, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	return cs.Close()
}
