package httpguard

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// A listener past its per-source cap closes a new connection from that
// source as it is accepted, and counts it; closing a kept one makes room.
func TestLimit_ClosesConnectionsPastTheCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Limit(ln, Limits{Max: 100, PerSource: 3})
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	var conns []net.Conn
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			continue // reset as it was accepted
		}
		defer c.Close()
		conns = append(conns, c)
	}
	kept, _ := Kept(conns)
	open, refused := l.Open()
	if kept != 3 || open != 3 || refused != 2 {
		t.Fatalf("kept %d, open %d, refused %d; want 3, 3, 2", kept, open, refused)
	}
	conns[0].Close()
	time.Sleep(100 * time.Millisecond)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if kept, _ := Kept([]net.Conn{c}); kept != 1 {
		t.Fatal("closing a kept connection made no room")
	}
}

// IPv6 sources count by /64, IPv4 by address, a mapped IPv4 as IPv4.
func TestSourceKey_IPv6By64(t *testing.T) {
	for in, want := range map[string]string{
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:1":   "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:1":        "2001:db8:1:3::/64",
		"127.0.0.2:80":               "127.0.0.2",
		"[::ffff:192.0.2.1]:80":      "192.0.2.1",
		"[fe80::1%eth0]:80":          "fe80::/64",
		"not an address":             "not an address",
	} {
		if got := SourceKey(in); got != want {
			t.Errorf("SourceKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// Flood counts what a capped listener keeps and refuses and leaves no
// connection open; SendHead reads the answer to a request whose body
// never comes.
func TestFlood_CountsKeptAndRefusedAndClosesThem(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Limit(ln, Limits{Max: 100, PerSource: 3})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Refusing(w)
		http.Error(w, "no", http.StatusUnauthorized)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	kept, refused := Flood(ln.Addr().String(), 5)
	if kept != 3 || refused != 2 {
		t.Fatalf("kept %d, refused %d; want 3, 2", kept, refused)
	}
	deadline := time.Now().Add(10 * time.Second)
	for open, _ := l.Open(); open != 0; open, _ = l.Open() {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open after Flood", open)
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, closes, _, err := SendHead(ln.Addr().String(), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", 10*time.Second)
	if err != nil || status != http.StatusUnauthorized || !closes {
		t.Fatalf("SendHead: %d, Connection: close %v, %v", status, closes, err)
	}
}
