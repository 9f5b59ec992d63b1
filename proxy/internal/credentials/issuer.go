package credentials

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agentrt/agentrt/trace"
)

// A pre-registered client's secret or key belongs to one authorization
// server, but discovery takes the authorization server from the MCP
// server's protected-resource metadata: a hostile or compromised server
// could name its own and receive the client's credentials. So an OAuth
// entry with a client_secret or a private_key names the issuer its client
// is registered with, and the proxy reads the metadata first and sends
// nothing to an authorization server that is not that issuer.

// resolveIssuer checks an entry's issuer: required with a secret or a
// key, an absolute http(s) URL with no query or fragment.
func resolveIssuer(field, issuer string, credentials bool) (string, error) {
	if issuer == "" {
		if credentials {
			return "", bad(field+".issuer", "must name the authorization server the client is registered with (its issuer URL) whenever a client_secret or private_key is configured")
		}
		return "", nil
	}
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", bad(field+".issuer", "must be an http or https URL with no query, fragment or user, got %q", trace.Sanitize(issuer))
	}
	return issuer, nil
}

// sameIssuer compares issuer identifiers as RFC 8414 metadata validation
// does, ignoring one trailing slash.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// IssuerMismatchError is an authorization server, named by a server's
// metadata, that is not the issuer its client is registered with.
type IssuerMismatchError struct {
	Server string
	Named  string
	Issuer string
}

func (e *IssuerMismatchError) Error() string {
	return fmt.Sprintf("proxy: server %q names the authorization server %s, not %s that its client is registered with, so the proxy sent it no credentials",
		e.Server, trace.Sanitize(e.Named), trace.Sanitize(e.Issuer))
}

// checkIssuer refuses an authorization server other than issuer; an empty
// issuer (a client with no secret or key) allows any.
func checkIssuer(server, issuer, named string) error {
	if issuer == "" || sameIssuer(issuer, named) {
		return nil
	}
	return &IssuerMismatchError{Server: server, Named: named, Issuer: issuer}
}

// issuerGuard reads the protected-resource metadata before the SDK
// handler it wraps does anything, and refuses an authorization server
// that is not the issuer. The wrapped handler is also given the issuer
// (oauthex.ClientCredentials.Issuer), so metadata that changes between
// the two reads is refused there too.
type issuerGuard struct {
	auth.OAuthHandler
	server, issuer string
	client         *http.Client
}

func (g issuerGuard) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if g.issuer == "" {
		return g.OAuthHandler.Authorize(ctx, req, resp)
	}
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("proxy: server %q: the WWW-Authenticate header does not parse: %v", g.server, err)
	}
	prm, err := resourceMetadata(ctx, g.server, g.client, challenges, req.URL.String())
	if err == nil {
		err = checkIssuer(g.server, g.issuer, prm.AuthorizationServers[0])
	}
	if err != nil {
		resp.Body.Close()
		return err
	}
	return g.OAuthHandler.Authorize(ctx, req, resp)
}
