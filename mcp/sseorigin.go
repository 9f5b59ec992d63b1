package mcp

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentrt/agentrt/trace"
)

// A legacy SSE server names, in its first event, the endpoint the client
// posts every message to, and the go-sdk's SSE client transport posts
// there whatever it names: initialize, and every tool call with its
// arguments, could go to another host. The SSE client's requests go
// through originGuard, which refuses, before anything is sent, a request
// to another scheme, host or port than the configured SSE URL's.

// OriginError is a request the SSE client refused because its URL is on
// another origin than the server's configured SSE URL. It names the
// origins only: a path or query may carry what the server chose.
type OriginError struct {
	Server string
	Named  string // the origin the server named
	Want   string // the configured SSE URL's origin
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("mcp: server %q named %s as its message endpoint, another origin than its SSE URL's %s, so nothing was posted there",
		e.Server, trace.Sanitize(e.Named), e.Want)
}

// originGuard sends only requests to one origin.
type originGuard struct {
	inner  http.RoundTripper
	server string
	origin string
}

// CloseIdleConnections closes the idle connections of the transport it
// guards.
func (g *originGuard) CloseIdleConnections() { closeIdle(g.inner) }

func (g *originGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := originOf(req.URL); o != g.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &OriginError{Server: g.server, Named: o, Want: g.origin}
	}
	return g.inner.RoundTrip(req)
}

// originOf is scheme://host:port, lowercased, with the scheme's default
// port written out.
func originOf(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// sseHTTPClient is httpClient for a legacy SSE server: every request it
// sends goes to the origin of the server's SSE URL.
func sseHTTPClient(srv *Server, t *tap) (*http.Client, error) {
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: the SSE URL does not parse: %v", srv.Name, err)
	}
	c := httpClient(srv.HTTPClient, t)
	c.Transport = &originGuard{inner: c.Transport, server: srv.Name, origin: originOf(u)}
	return c, nil
}
