package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
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

type FileOAuth struct {
	Grant             string      `json:"grant"`
	Tokens            string      `json:"tokens"`
	ClientID          string      `json:"client_id"`
	ClientSecret      *FileSecret `json:"client_secret"`
	Issuer            string      `json:"issuer"`
	PrivateKey        *FileKey    `json:"private_key"`
	ClientMetadataURL string      `json:"client_metadata_url"`
	Scopes            []string    `json:"scopes"`
	RedirectPort      int         `json:"redirect_port"`
}

// Resolve checks the entry of server name, reached at endpoint (sse when
// through the legacy SSE transport); rel makes a file's path absolute.
func (fo *FileOAuth) Resolve(field string, rel func(string) string, name, endpoint string, sse bool) (*OAuthConfig, error) {
	o := &OAuthConfig{Grant: GrantType(fo.Grant), ClientID: fo.ClientID, ClientMetadataURL: fo.ClientMetadataURL,
		Scopes: fo.Scopes, RedirectPort: fo.RedirectPort}
	if endpoint == "" || sse {
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
		r, err := fo.ClientSecret.Resolve(field+".client_secret", rel)
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
		k, err := fo.PrivateKey.Resolve(field+".private_key", rel)
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
		o.Tokens = rel(name + ".oauth.json")
	}
	return o, nil
}

// Tokens is a token file: what refreshing needs, bound to the
// endpoint it was obtained for. It holds secrets and is owner-only.
type Tokens struct {
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

// ReadTokens reads a token file through files.ReadSecret.
func ReadTokens(path string) (*Tokens, error) {
	b, err := files.ReadSecret(path, MaxSecretFile)
	if err != nil {
		return nil, err
	}
	var st Tokens
	if err := decodeStrict(b, &st); err != nil {
		return nil, fmt.Errorf("%s is not a token file: %v", path, err)
	}
	if st.Token == nil || st.Token.AccessToken == "" || st.TokenURL == "" || st.ClientID == "" {
		return nil, fmt.Errorf("%s holds no usable token", path)
	}
	return &st, nil
}

func (st *Tokens) write(path string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(b, '\n'), 0o600)
}

// Handler is the handler the proxy connects OAuth server name, at
// endpoint, with: the tokens `agentrt-proxy login` stored (a *Stored), or
// client credentials. lookup is the proxy's environment; onNeeded, when
// set, hears that a stored login no longer works.
func Handler(name, endpoint string, o *OAuthConfig, lookup func(string) (string, bool), onNeeded func(string)) (auth.OAuthHandler, error) {
	if o.Grant == GrantClientCredentials && o.PrivateKey != nil {
		h, err := newKeyClientCredentials(name, o.Issuer, o.ClientID, o.PrivateKey, HTTPClient(endpoint), nil)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	if o.Grant == GrantClientCredentials {
		secret, err := o.ClientSecret.value(name, "oauth.client_secret", lookup)
		if err != nil {
			return nil, err
		}
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID, Issuer: o.Issuer, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
			HTTPClient:  HTTPClient(endpoint),
		})
		if err != nil {
			return nil, fmt.Errorf("proxy: server %q: oauth: %w", name, err)
		}
		return issuerGuard{OAuthHandler: detached{h}, server: name, issuer: o.Issuer, client: HTTPClient(endpoint)}, nil
	}
	l := &Stored{server: name, endpoint: endpoint, path: o.Tokens, onNeeded: onNeeded}
	if o.ClientSecret != nil {
		l.secret = func() (string, error) { return o.ClientSecret.value(name, "oauth.client_secret", lookup) }
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
