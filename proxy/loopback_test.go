package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/proxy/internal/credentials"
)

// nonLoopbackIP is an address of this machine's own interfaces that is
// not loopback, or "" when it has none.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// challengingServer is an MCP endpoint on ip that answers every request
// with a 401 whose challenge points at metadata on loopback.
func challengingServer(t *testing.T, ip, metadataURL string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+metadataURL+`"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// loopbackService is a service on 127.0.0.1 (an admin page, a cloud
// agent) that records every request and answers as an authorization
// server would, naming itself.
func loopbackService(t *testing.T) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	var srv *httptest.Server
	srv = httptest.NewServer(rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource":
			w.Write([]byte(`{"resource":"x","authorization_servers":["` + srv.URL + `"]}`))
		default:
			w.Write([]byte(`{"issuer":"` + srv.URL + `","authorization_endpoint":"` + srv.URL + `/authorize","token_endpoint":"` + srv.URL +
				`/token","registration_endpoint":"` + srv.URL + `/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`))
		}
	})))
	t.Cleanup(srv.Close)
	return srv, rec
}

// An MCP server that is not on loopback names a service on loopback in
// its challenge: the proxy's discovery, registration and token requests
// (a login by a public client, client credentials with a secret) send
// that service nothing, and the connection fails. The same server on
// loopback is followed there, as a local development setup needs.
// Before, a remote server could make the proxy send GETs to any loopback
// address.
func TestOAuth_RemoteServerCannotSendTheProxyToLoopback(t *testing.T) {
	ip := nonLoopbackIP(t)
	if ip == "" {
		// No interface but loopback: the rule is held at the dialer.
		checkDialerRule(t)
		return
	}
	entries := map[string]func(svc string) string{
		"login": func(string) string { return `{}` },
		"client_credentials": func(svc string) string {
			return `{"grant":"client_credentials","client_id":"c","client_secret":{"env":"S"},"issuer":` + jsonString(svc) + `}`
		},
	}
	lookup := func(k string) (string, bool) { return "the-secret", k == "S" }
	connect := func(name, endpoint, svc string) error {
		path := writeFile(t, filepath.Join(t.TempDir(), "proxy.json"), keyServerConfig(endpoint, entries[name](svc)))
		cfg, err := LoadConfig(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return connectAs(ctx, t, name, cfg.Servers[0], lookup, 10*time.Second, func(string) error { cancel(); return errors.New("no browser here") })
	}
	for name := range entries {
		svc, rec := loopbackService(t)
		remote := challengingServer(t, ip, svc.URL+"/.well-known/oauth-protected-resource")
		if err := connect(name, remote, svc.URL); err == nil {
			t.Errorf("%s: a remote server sending the proxy to loopback connected", name)
		}
		if got := rec.all(); len(got) != 0 {
			t.Errorf("%s: the loopback service received %q from a remote server's discovery", name, got)
		}
		local := challengingServer(t, "127.0.0.1", svc.URL+"/.well-known/oauth-protected-resource")
		_ = connect(name, local, svc.URL)
		if got := rec.all(); len(got) == 0 {
			t.Errorf("%s: a loopback server's loopback authorization server was not asked", name)
		}
	}
	checkDialerRule(t)
}

// checkDialerRule holds the rule at the dialer, with fixed addresses: a
// remote server's OAuth requests reach no loopback or unspecified
// address, and a loopback server's reach anything.
func checkDialerRule(t *testing.T) {
	t.Helper()
	remote, local := credentials.DialRule("https://mcp.example.com/mcp"), credentials.DialRule("http://127.0.0.1:8080/mcp")
	for _, addr := range []string{"127.0.0.1:80", "127.1.2.3:443", "[::1]:80", "[::ffff:127.0.0.1]:80", "0.0.0.0:80", "[::]:80"} {
		var le *credentials.LoopbackRefusedError
		if err := remote(addr); !errors.As(err, &le) || le.Address != addr {
			t.Errorf("a remote server's OAuth request to %s: %v, want it refused as loopback", addr, err)
		}
		if err := local(addr); err != nil {
			t.Errorf("a loopback server's OAuth request may not reach %s: %v", addr, err)
		}
	}
	for _, addr := range []string{"192.0.2.10:443", "[2001:db8::1]:443", "10.0.0.1:80"} {
		if err := remote(addr); err != nil {
			t.Errorf("a remote server's OAuth request may not reach %s: %v", addr, err)
		}
	}
	for _, ep := range []string{"http://localhost:3000/mcp", "http://[::1]:3000/mcp", "http://127.0.0.2/mcp"} {
		if err := credentials.DialRule(ep)("127.0.0.1:80"); err != nil {
			t.Errorf("%s is on loopback, yet its OAuth request may not reach 127.0.0.1: %v", ep, err)
		}
	}
}
