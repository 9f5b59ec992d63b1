package providers

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
)

// A server answers with a redirect to another server whose path and query
// carry secrets; the client returns the 3xx unfollowed and the classified
// error names only the target's host.
func TestClient_RefusesRedirects(t *testing.T) {
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer target.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/steal/path?token=hunter2", status)
		}))
		// A caller's own CheckRedirect that would follow is overridden.
		c := Client(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }})
		body, err := Send(context.Background(), c, "test", origin.URL+"/v1", http.Header{"X-Api-Key": {"sk-secret"}}, []byte(`{}`), "sk-secret")
		origin.Close()
		if body != nil {
			t.Fatalf("status %d: got a body %q", status, body)
		}
		var re *RedirectError
		if !errors.As(err, &re) {
			t.Fatalf("status %d: err = %v, want a *RedirectError", status, err)
		}
		var te *agentrt.TransientError
		if errors.As(err, &te) {
			t.Fatalf("status %d: a redirect must be permanent, got %v", status, err)
		}
		host := strings.TrimPrefix(target.URL, "http://")
		if re.Host != host || !strings.Contains(err.Error(), host) {
			t.Fatalf("status %d: error %q does not name host %q", status, err, host)
		}
		for _, leak := range []string{"steal", "token", "hunter2", "sk-secret"} {
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("status %d: error %q leaks %q", status, err, leak)
			}
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect target received %d request(s), want 0", n)
	}
}

// Client never hands back http.DefaultClient and never changes it.
func TestClient_NeverSharesTheDefault(t *testing.T) {
	before := http.DefaultClient.CheckRedirect
	c := Client(nil)
	if c == http.DefaultClient || c.Timeout != DefaultTimeout || c.CheckRedirect == nil {
		t.Fatalf("Client(nil) = %+v", c)
	}
	if http.DefaultClient.CheckRedirect != nil || before != nil {
		t.Fatal("http.DefaultClient was changed")
	}
	mine := &http.Client{Timeout: 7}
	c = Client(mine)
	if c == mine || c.Timeout != 7 || mine.CheckRedirect != nil {
		t.Fatalf("Client(mine) must copy and leave mine alone: %+v %+v", c, mine)
	}
}

// Only exactly localhost and literal loopback addresses are loopback.
func TestLoopback_OnlyLocalhostAndLiteralLoopbackAddresses(t *testing.T) {
	for _, h := range []string{"localhost", "127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"} {
		if !Loopback(h) {
			t.Errorf("Loopback(%q) = false, want true", h)
		}
	}
	for _, h := range []string{"", "LOCALHOST", "localhost.", "foo.localhost", "127.1", "0177.0.0.1", "0x7f.0.0.1",
		"2130706433", "0.0.0.0", "127.0.0.1.nip.io", "fe80::1%lo0", "::1%lo", "[::1]", "192.0.2.1", "10.0.0.1"} {
		if Loopback(h) {
			t.Errorf("Loopback(%q) = true, want false", h)
		}
	}
}

// A key may cross plain http only to loopback; https goes anywhere; other
// schemes, user information, queries and hostless URLs are refused.
func TestCheckEndpoint_KeyOverPlainHTTPOnlyToLoopback(t *testing.T) {
	cases := []struct {
		url    string
		hasKey bool
		ok     bool
	}{
		{"https://api.openai.com/v1", true, true},
		{"https://10.1.2.3:8443/v1", true, true},
		{"http://localhost:11434", true, true},
		{"http://127.0.0.1:8080/v1", true, true},
		{"http://[::1]:8080/v1", true, true},
		{"HTTP://127.0.0.1:8080", true, true},
		{"http://example.com/v1", false, true},
		{"http://192.168.1.5:11434", false, true},
		{"http://example.com/v1", true, false},
		{"http://192.168.1.5:11434", true, false},
		{"http://localhost.:8080", true, false},
		{"http://LOCALHOST:8080", true, false},
		{"http://127.1:8080", true, false},
		{"http://foo.localhost", true, false},
		{"http://0.0.0.0:8080", true, false},
		{"http://[fe80::1%25lo0]:8080", true, false},
		{"ftp://localhost/v1", false, false},
		{"file:///etc/passwd", false, false},
		{"localhost:8080", false, false},
		{"//example.com", false, false},
		{"https://user:pw@example.com", false, false},
		{"https://example.com/v1?key=abc", false, false},
		{"https://example.com/v1#frag", false, false},
		{"https://", false, false},
		{"", false, false},
		{"http://a b", false, false},
	}
	for _, c := range cases {
		err := CheckEndpoint(c.url, c.hasKey)
		if (err == nil) != c.ok {
			t.Errorf("CheckEndpoint(%q, %v) = %v, want ok=%v", c.url, c.hasKey, err, c.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrEndpoint) || !errors.Is(err, agentrt.ErrInvalidConfig) {
				t.Errorf("CheckEndpoint(%q): %v does not match ErrEndpoint and ErrInvalidConfig", c.url, err)
			}
			for _, leak := range []string{"pw@", "key=abc", "#frag", "passwd"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("CheckEndpoint(%q): error %q repeats %q", c.url, err, leak)
				}
			}
		}
	}
}

// fakeRemote is a connection that claims a remote address of its choosing.
type fakeRemote struct {
	net.Conn
	remote net.Addr
	closed atomic.Bool
}

func (c *fakeRemote) RemoteAddr() net.Addr { return c.remote }
func (c *fakeRemote) Close() error         { c.closed.Store(true); return c.Conn.Close() }

// The loopback-only transport refuses a connection that would leave the
// machine in both of its modes: its own dialler refuses a non-loopback
// address before connecting, and with a consumer's dialler (standing in for a
// resolver that maps localhost elsewhere) a connection whose remote address
// is not loopback is closed before a request is written. Nothing here dials
// beyond loopback: 192.0.2.1 is TEST-NET and is refused before connect.
func TestLoopbackOnly_RefusesAConnectionThatLeavesTheMachine(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()

	// Own dialler: the dialled address is checked before connect.
	own := LoopbackOnly(nil)
	if own.Proxy != nil {
		t.Fatal("the loopback-only transport must not use a proxy")
	}
	if _, err := own.DialContext(context.Background(), "tcp", "192.0.2.1:80"); !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("dial 192.0.2.1: err = %v, want ErrNotLoopback", err)
	}
	c := &http.Client{Transport: own}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("a loopback server must be reachable: %v", err)
	}
	DrainClose(resp.Body)
	if served.Load() != 1 {
		t.Fatalf("served = %d, want 1", served.Load())
	}

	// A consumer's dialler reaches the loopback server but reports a remote
	// address off the machine, as a hijacked resolver would produce.
	var conns []*fakeRemote
	hostile := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, srv.Listener.Addr().String())
			if err != nil {
				return nil, err
			}
			fc := &fakeRemote{Conn: conn, remote: &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 80}}
			conns = append(conns, fc)
			return fc, nil
		},
		Proxy: http.ProxyFromEnvironment,
	}
	guarded := LoopbackOnly(hostile)
	if guarded.Proxy != nil || hostile.Proxy == nil {
		t.Fatal("LoopbackOnly must drop the proxy on its copy only")
	}
	c = &http.Client{Transport: guarded}
	_, err = c.Get("http://localhost:1/v1")
	if !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("err = %v, want ErrNotLoopback", err)
	}
	if ClassifyTransport(err) != err {
		t.Fatalf("ErrNotLoopback must be permanent, got %v", ClassifyTransport(err))
	}
	if served.Load() != 1 {
		t.Fatalf("the server received a request over a refused connection (served = %d)", served.Load())
	}
	if len(conns) == 0 || !conns[0].closed.Load() {
		t.Fatal("the refused connection was not closed")
	}
}

// ClientFor installs the loopback-only transport exactly when a key goes over
// plain http, and leaves a consumer's own RoundTripper as given.
func TestClientFor_GuardsOnlyAKeyOverPlainHTTP(t *testing.T) {
	guarded := func(c *http.Client) bool {
		tr, ok := c.Transport.(*http.Transport)
		return ok && tr.Proxy == nil && tr.DialContext != nil
	}
	c, err := ClientFor(nil, "http://127.0.0.1:9/v1", true)
	if err != nil || !guarded(c) {
		t.Fatalf("key over http: %v, guarded=%v", err, err == nil && guarded(c))
	}
	if c, err = ClientFor(nil, "https://api.example.com", true); err != nil || c.Transport != nil {
		t.Fatalf("https: %v %v", err, c)
	}
	if c, err = ClientFor(nil, "http://127.0.0.1:9", false); err != nil || c.Transport != nil {
		t.Fatalf("no key: %v %v", err, c)
	}
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("x") })
	if c, err = ClientFor(&http.Client{Transport: rt}, "http://localhost:9", true); err != nil || c.Transport == nil {
		t.Fatalf("own RoundTripper: %v", err)
	}
	if _, ok := c.Transport.(roundTripFunc); !ok {
		t.Fatal("a consumer's own RoundTripper must be left as given")
	}
	if _, err = ClientFor(nil, "http://example.com", true); !errors.Is(err, ErrEndpoint) {
		t.Fatalf("key over http to a remote host: err = %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
