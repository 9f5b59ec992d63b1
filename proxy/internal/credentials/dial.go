package credentials

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/mcp"
)

// An MCP server names the URLs the proxy's OAuth client fetches: the
// protected-resource metadata in its challenge, the authorization server
// in that metadata, and the registration and token endpoints in the
// authorization server's. A remote server could name a loopback address
// and have the proxy send requests to services that trust whatever
// reaches them on loopback. So unless the MCP server itself is on
// loopback (a server under development, with its authorization server
// beside it), the OAuth client's dialer refuses loopback and unspecified
// addresses, after names are resolved. A forward proxy the environment
// names is dialed as always: where the request goes from there is the
// forward proxy's rule.

// LoopbackRefusedError is an OAuth request of a server that is not on
// loopback, refused because it would reach a loopback address.
type LoopbackRefusedError struct {
	Address string
}

func (e *LoopbackRefusedError) Error() string {
	return fmt.Sprintf("the OAuth request was not sent to %s: a server that is not on loopback may not send the proxy to a loopback address", e.Address)
}

// onLoopback reports whether endpoint's host is loopback: localhost or a
// loopback IP literal.
func onLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// DialRule is the rule the OAuth client of the MCP server at endpoint
// dials by: for a resolved address ("ip:port"), nil when it may be
// reached, a *LoopbackRefusedError when it is a loopback or unspecified
// address and endpoint is not on loopback.
func DialRule(endpoint string) func(address string) error {
	if onLoopback(endpoint) {
		return func(string) error { return nil }
	}
	return func(address string) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("the address %s is not an IP address and port", address)
		}
		if a := ap.Addr().Unmap(); a.IsLoopback() || a.IsUnspecified() {
			return &LoopbackRefusedError{Address: address}
		}
		return nil
	}
}

// HTTPClient is the client the SDK's OAuth code uses for discovery,
// registration and tokens of the MCP server at endpoint: no redirect
// followed, a deadline on each exchange, and DialRule(endpoint) held at
// the dialer.
func HTTPClient(endpoint string) *http.Client {
	rule := DialRule(endpoint)
	guarded := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error { return rule(address) }}
	plain := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if via, _ := ctx.Value(forwardProxyKey{}).(string); via != "" && via == addr {
			return plain.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: viaProxy{t},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return &mcp.RedirectError{Host: req.URL.Host}
		}}
}

// forwardProxyKey marks a request's context with the forward proxy
// (host:port) the transport will dial for it.
type forwardProxyKey struct{}

// viaProxy tells the dialer which address is the environment's forward
// proxy for each request, so that it alone is dialed without the rule.
type viaProxy struct{ t *http.Transport }

func (v viaProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	if u, err := v.t.Proxy(req); err == nil && u != nil {
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "socks5": "1080"}[u.Scheme]
			if port == "" {
				port = "80"
			}
		}
		req = req.WithContext(context.WithValue(req.Context(), forwardProxyKey{}, net.JoinHostPort(u.Hostname(), port)))
	}
	return v.t.RoundTrip(req)
}
