package notify_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
)

// A plain-http target must be reached at a loopback address: when the
// resolver maps localhost to an address that is not loopback (a poisoned
// hosts file, a hostile resolver), nothing is sent there, however the
// URL reads, and the notification is a dead letter saying why. With a
// resolver that maps localhost to loopback, the same target is reached.
func TestNotifier_PlainHTTPDialMustReachLoopback(t *testing.T) {
	f := fixture.New(t)
	// A receiver on an address of this machine that is not loopback, when
	// it has one; else a documentation address nothing answers on. Either
	// way the notifier must refuse before it dials.
	elsewhere := netip.MustParseAddr("192.0.2.1")
	var heard atomic.Int64
	if ip := nonLoopback(); ip.IsValid() {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err == nil {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { heard.Add(1) }))
			srv.Listener = ln
			srv.Start()
			defer srv.Close()
			elsewhere = ip
			t.Logf("a receiver listens on %s", ln.Addr())
		}
	}
	local := newSink(t, f.Clock)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(local.srv.URL, "http://"))
	r := newRunner(t, f, notify.Target{URL: "http://localhost:" + port + "/hook", Secret: secret})
	notify.SetLookup(&r.cfg, func(_ context.Context, host string) ([]netip.Addr, error) {
		if host != "localhost" {
			t.Errorf("resolved %q", host)
		}
		return []netip.Addr{elsewhere}, nil
	})
	r.cfg.MaxAttempts = 2
	f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	r.untilIdle()
	if heard.Load() != 0 || local.count() != 0 {
		t.Fatalf("a notification was sent although localhost resolved to %s: %d there, %d on loopback", elsewhere, heard.Load(), local.count())
	}
	dl := r.deadLetters()
	if len(dl) != 1 || !strings.Contains(dl[0], "resolves to "+elsewhere.String()+", which is not loopback") {
		t.Fatalf("dead letters = %q", dl)
	}

	// The same target, localhost resolving to loopback: delivered.
	f2 := fixture.New(t)
	sink := newSink(t, f2.Clock)
	_, port, _ = net.SplitHostPort(strings.TrimPrefix(sink.srv.URL, "http://"))
	r2 := newRunner(t, f2, notify.Target{URL: "http://localhost:" + port + "/hook", Secret: secret})
	notify.SetLookup(&r2.cfg, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})
	f2.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	r2.untilIdle()
	if len(sink.notifications()) != 1 || len(r2.deadLetters()) != 0 {
		t.Fatalf("to localhost on loopback: %d delivered, dead letters %q", len(sink.notifications()), r2.deadLetters())
	}
}

// nonLoopback is an IPv4 address of this machine that is not loopback.
func nonLoopback() netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr()
		}
	}
	return netip.Addr{}
}
