package console_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
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
	h, err := console.New(console.DefaultConfig(st, "http://localhost:7380"))
	if err != nil {
		t.Fatal(err)
	}
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
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		io.WriteString(c, head)
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", name, err)
		}
		elapsed := time.Since(start)
		res.Body.Close()
		c.Close()
		if res.StatusCode < 400 || !res.Close {
			t.Errorf("%s: %d, Connection: close %v", name, res.StatusCode, res.Close)
		}
		t.Logf("%s: %d after %s", name, res.StatusCode, elapsed)
		if elapsed > 10*time.Second {
			t.Errorf("%s: answered after %s, waiting for the body", name, elapsed)
		}
	}
	var held []net.Conn
	refused := 0
	for i := 0; i < console.MaxConnectionsPerSource+5; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			refused++
			continue
		}
		held = append(held, c)
	}
	kept, closed := httpguard.Kept(held)
	refused += closed
	for _, c := range held {
		c.Close()
	}
	if refused < 5 || kept > console.MaxConnectionsPerSource {
		t.Fatalf("of %d connections from one source %d were kept and %d refused; the cap is %d",
			console.MaxConnectionsPerSource+5, kept, refused, console.MaxConnectionsPerSource)
	}
}
