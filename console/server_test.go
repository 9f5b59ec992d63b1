package console_test

import (
	"net"
	"testing"
	"time"

	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/internal/httpguard"
)

// A refused request whose declared body never arrives is answered at once
// with Connection: close, not after the console's 30-second read timeout;
// connections past the per-source cap are closed as they are accepted.
func TestServers_SlowBodyIsRefusedAtOnce(t *testing.T) {
	st := openStore(t)
	h := newHandler(t, st, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := console.NewServer("", h)
	go srv.Serve(console.LimitListener(ln))
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	for name, head := range map[string]string{
		"foreign origin": "POST /api/login/begin HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil.test\r\nContent-Length: 60000\r\n\r\n{",
		"no session":     "POST /runs/r/cancel HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:7380\r\nContent-Length: 60000\r\n\r\nnote=",
		"no CSRF token":  "POST /api/login/begin HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:7380\r\nContent-Length: 60000\r\n\r\n{",
	} {
		status, closes, elapsed, err := httpguard.SendHead(addr, head, 60*time.Second)
		if err != nil {
			t.Fatalf("%s: no answer: %v", name, err)
		}
		if status < 400 || !closes {
			t.Errorf("%s: %d, Connection: close %v", name, status, closes)
		}
		t.Logf("%s: %d after %s", name, status, elapsed)
		if elapsed > 10*time.Second {
			t.Errorf("%s: answered after %s, waiting for the body", name, elapsed)
		}
	}
	kept, refused := httpguard.Flood(addr, console.MaxConnectionsPerSource+5)
	if refused < 5 || kept > console.MaxConnectionsPerSource {
		t.Fatalf("of %d connections from one source %d were kept and %d refused; the cap is %d",
			console.MaxConnectionsPerSource+5, kept, refused, console.MaxConnectionsPerSource)
	}
}
