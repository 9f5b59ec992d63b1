package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/agentrt/agentrt"
)

// DefaultTimeout bounds a whole exchange on a client Client builds itself. It
// is a backstop; callers bound calls with their context.
const DefaultTimeout = 15 * time.Minute

// Client returns a client for provider calls: a copy of c, or a new client
// with DefaultTimeout when c is nil. It never returns http.DefaultClient, so
// nothing set here leaks into the rest of the process.
//
// The copy refuses redirects (see RefuseRedirects) whatever c.CheckRedirect
// said: following one would carry the request, its prompt and its key to a
// place the operator did not name.
func Client(c *http.Client) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	} else {
		cc.Timeout = DefaultTimeout
	}
	cc.CheckRedirect = RefuseRedirects
	return &cc
}

// RefuseRedirects is an http.Client CheckRedirect that follows nothing: the
// 3xx reply itself comes back, and ClassifyResponse turns it into a permanent
// *RedirectError naming only the host it pointed to. Returning the reply
// rather than an error keeps the target's path and query, which may carry
// anything, out of every error.
func RefuseRedirects(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}

// ErrEndpoint says a provider endpoint was refused by CheckEndpoint.
var ErrEndpoint = errors.New("providers: endpoint refused")

// EndpointError says why an endpoint was refused. It names the scheme and host
// only, never a path, query or user information. It matches ErrEndpoint and
// agentrt.ErrInvalidConfig.
type EndpointError struct {
	Scheme string
	Host   string
	Reason string
}

func (e *EndpointError) Error() string {
	if e.Host == "" {
		return "providers: refusing the endpoint: " + e.Reason
	}
	return fmt.Sprintf("providers: refusing the endpoint %s://%s: %s", e.Scheme, e.Host, e.Reason)
}

// Is matches ErrEndpoint and agentrt.ErrInvalidConfig.
func (e *EndpointError) Is(target error) bool {
	return target == ErrEndpoint || target == agentrt.ErrInvalidConfig
}

// CheckEndpoint refuses a base URL an adapter must not send to. The URL must
// be http or https with a host, and carry no user information, query or
// fragment. With hasKey, plain http is allowed only to a Loopback host, so a
// key never crosses a network in clear text; https may go anywhere.
func CheckEndpoint(rawURL string, hasKey bool) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &EndpointError{Reason: "the URL does not parse"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &EndpointError{Reason: fmt.Sprintf("the scheme must be http or https, got %q", u.Scheme)}
	}
	if u.Host == "" || u.Hostname() == "" {
		return &EndpointError{Scheme: u.Scheme, Reason: "the URL names no host"}
	}
	e := &EndpointError{Scheme: u.Scheme, Host: u.Host}
	switch {
	case u.User != nil:
		e.Reason = "the URL carries user information; pass credentials in the configuration instead"
	case u.RawQuery != "" || u.ForceQuery:
		e.Reason = "the URL carries a query; name the base path only"
	case u.Fragment != "":
		e.Reason = "the URL carries a fragment; name the base path only"
	case hasKey && u.Scheme == "http" && !Loopback(u.Hostname()):
		e.Reason = "an API key goes over plain http only to localhost or a literal loopback address; use https"
	default:
		return nil
	}
	return e
}

// Loopback reports whether host is exactly "localhost" or a literal loopback
// IP address (127.0.0.0/8, ::1, ::ffff:127.0.0.1) without a zone. Anything a
// resolver or a lenient parser would have to interpret (LOCALHOST,
// localhost., foo.localhost, 127.1, 0x7f.0.0.1) is not loopback.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNotLoopback says a connection meant to stay on the machine was about to
// leave it. It is permanent.
var ErrNotLoopback = errors.New("providers: refusing a connection to a non-loopback address for a plain-http endpoint that carries an API key")

// NotLoopbackError names the address a loopback-only dial refused. It matches
// ErrNotLoopback.
type NotLoopbackError struct{ Addr string }

func (e *NotLoopbackError) Error() string {
	return fmt.Sprintf("providers: refusing a connection to %s: a plain-http endpoint that carries an API key must resolve to a loopback address", e.Addr)
}

// Is matches ErrNotLoopback.
func (e *NotLoopbackError) Is(target error) bool { return target == ErrNotLoopback }

// loopbackAddr reports whether addr ("ip:port" or a bare IP) is a loopback
// IP. A name is not: only the dialled address counts.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackOnly returns a copy of t (or of a default transport when t is nil)
// that refuses, with ErrNotLoopback, any connection whose dialled remote
// address is not loopback, and that uses no proxy. It is what an adapter
// uses for a plain-http endpoint with a key, so neither a resolver mapping
// "localhost" elsewhere nor a proxy from the environment can carry the key
// off the machine.
//
// When t dials with its own DialContext or DialTLSContext, the check runs on
// the connection's remote address after the dial and before a byte is
// written; otherwise it runs on the resolved address before connecting.
func LoopbackOnly(t *http.Transport) *http.Transport {
	var c *http.Transport
	if t == nil {
		c = http.DefaultTransport.(*http.Transport).Clone()
		c.DialContext = nil
	} else {
		c = t.Clone()
	}
	c.Proxy = nil
	if c.DialContext == nil {
		d := &net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				if !loopbackAddr(address) {
					return &NotLoopbackError{Addr: address}
				}
				return nil
			},
		}
		c.DialContext = checkRemote(d.DialContext)
	} else {
		c.DialContext = checkRemote(c.DialContext)
	}
	if c.DialTLSContext != nil {
		c.DialTLSContext = checkRemote(c.DialTLSContext)
	}
	return c
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// checkRemote refuses a connection whose remote address is not loopback.
func checkRemote(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		remote := ""
		if ra := conn.RemoteAddr(); ra != nil {
			remote = ra.String()
		}
		if !loopbackAddr(remote) {
			_ = conn.Close()
			return nil, &NotLoopbackError{Addr: remote}
		}
		return conn, nil
	}
}

// ClientFor checks rawURL with CheckEndpoint and returns the client an adapter
// sends to it with: Client(c), and, for plain http with a key, a loopback-only
// transport when the transport is an *http.Transport (or unset). A consumer's
// own RoundTripper of another type is left as given.
func ClientFor(c *http.Client, rawURL string, hasKey bool) (*http.Client, error) {
	if err := CheckEndpoint(rawURL, hasKey); err != nil {
		return nil, err
	}
	cc := Client(c)
	u, _ := url.Parse(rawURL) // parsed by CheckEndpoint
	if hasKey && u.Scheme == "http" {
		switch t := cc.Transport.(type) {
		case nil:
			cc.Transport = LoopbackOnly(nil)
		case *http.Transport:
			cc.Transport = LoopbackOnly(t)
		}
	}
	return cc, nil
}
