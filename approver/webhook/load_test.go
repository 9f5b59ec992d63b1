package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/webhook"
)

// liveServer is the webhook as a deployment runs it: NewServer on
// Listen's capped listener, on loopback, on the wall clock.
func liveServer(t *testing.T, a approver.Approver, mod func(*webhook.Config)) string {
	t.Helper()
	cfg := webhook.DefaultConfig(a, secret)
	if mod != nil {
		mod(&cfg)
	}
	h, err := webhook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := webhook.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := webhook.NewServer("", h)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// clientFrom is an HTTP client whose connections come from a loopback
// source address of its own (Linux routes all of 127/8 to lo).
func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// While unsigned, wrongly signed and stale requests flood the webhook
// from one source as fast as 16 connections can send them, correctly
// signed decisions from another source are applied: at least 95% of them,
// each within its skew. Before the fix the flood spent the one shared
// bucket before any signature was checked and almost none were.
func TestWebhook_UnsignedFloodDoesNotStopSignedDecisions(t *testing.T) {
	f := fixture.New(t)
	local := approver.New(f.Store, nil)
	local.Now = f.Clock.Now
	const decisions = 30
	var pending []approverApproval
	for i := 0; i < decisions; i++ {
		a := f.Start(t, fmt.Sprintf("run-%02d", i), fixture.Send(fmt.Sprintf(`{"to":"%d"}`, i)))
		pending = append(pending, approverApproval{a.RunID, a.ID, a.Hash})
	}
	base := liveServer(t, local, nil)

	ctx, stop := context.WithCancel(context.Background())
	var flood, refused, limited atomic.Int64
	var wg sync.WaitGroup
	attacker := clientFrom("127.0.0.2")
	junk := bytes.Repeat([]byte("x"), 1024)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				p := pending[i%decisions]
				path := "/runs/" + p.run + "/approvals/" + p.id + "/approve"
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(junk))
				switch (g + i) % 3 {
				case 1: // signed with the wrong secret
					signed, _ := webhook.NewRequest(ctx, []byte("not the secret, but long enough to pass"), time.Now(), http.MethodPost, base, path, junk)
					req = signed
				case 2: // signed with the secret, an hour ago
					signed, _ := webhook.NewRequest(ctx, secret, time.Now().Add(-time.Hour), http.MethodPost, base, path, junk)
					req = signed
				}
				resp, err := attacker.Do(req)
				flood.Add(1)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					t.Errorf("a forged request was applied: %s", path)
				}
				if resp.StatusCode == http.StatusTooManyRequests {
					limited.Add(1)
				}
				refused.Add(1)
			}
		}(g)
	}
	time.Sleep(500 * time.Millisecond) // the flood is under way

	signer := clientFrom("127.0.0.1")
	applied, late := 0, 0
	start := time.Now()
	floodBefore := flood.Load()
	for _, p := range pending {
		body, _ := json.Marshal(approver.Answer{RunID: p.run, ApprovalID: p.id, Hash: p.hash, By: "alice"})
		signedAt := time.Now()
		req, err := webhook.NewRequest(context.Background(), secret, signedAt, http.MethodPost, base, "/runs/"+p.run+"/approvals/"+p.id+"/approve", body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := signer.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode != http.StatusAccepted:
				t.Logf("decision %s: %d", p.id, resp.StatusCode)
			case time.Since(signedAt) > webhook.DefaultSkew:
				late++
			default:
				applied++
			}
		} else {
			t.Logf("decision %s: %v", p.id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	rate := float64(flood.Load()-floodBefore) / elapsed.Seconds()
	stop()
	wg.Wait()
	t.Logf("%d of %d signed decisions applied within their skew (%d late) under a flood of %.0f requests/s (%d flood requests in all)",
		applied, decisions, late, rate, flood.Load())
	if applied*100 < decisions*95 {
		t.Fatalf("only %d of %d signed decisions were applied during the flood; want at least 95%%", applied, decisions)
	}
	// The flood's failures were limited on their own: past the source's
	// allowance they were answered 429, and the signed source was not.
	t.Logf("%d of the flood's %d answers were 429 (the failed-authentication limit)", limited.Load(), refused.Load())
	if refused.Load() == 0 || limited.Load()*2 < refused.Load() {
		t.Fatalf("of %d flood answers only %d were 429: the failed-authentication limit did not hold", refused.Load(), limited.Load())
	}
	for _, p := range pending {
		a, err := f.Store.GetApproval(context.Background(), p.run, p.id)
		if err != nil {
			t.Fatal(err)
		}
		if a.DecidedBy != "" && a.DecidedBy != "alice" {
			t.Fatalf("approval %s decided by %q", p.id, a.DecidedBy)
		}
	}
}

type approverApproval struct{ run, id, hash string }

// Every signature the handler has verified and not yet forgotten is held
// in its replay set; when the set is full a new, correctly signed request
// is answered 429 (rate_limited) with Retry-After, not accepted unchecked
// and not mistaken for a replay.
func TestHandler_ReplaySetFullAnswers429(t *testing.T) {
	r := newRig(t, func(c *webhook.Config) { c.Burst = 1; c.Rate = 1; c.Skew = time.Second })
	r.f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	capacity := webhook.ReplayCap(webhook.Config{Burst: 1, Rate: 1, Skew: time.Second})
	// Each verified signature is remembered, even one the rate then
	// refuses, so the set fills at one instant of the clock.
	for i := 0; i < capacity; i++ {
		got := r.send(t, http.MethodGet, "/runs/run-1/approvals", nil)
		want := http.StatusTooManyRequests
		if i == 0 {
			want = http.StatusOK
		}
		if got.status != want || (i > 0 && got.body == "") {
			t.Fatalf("request %d: %d %s, want %d", i, got.status, got.body, want)
		}
		if i > 0 && strings.Contains(got.body, "replay") {
			t.Fatalf("request %d was refused by the replay set early: %s", i, got.body)
		}
	}
	got := r.send(t, http.MethodGet, "/runs/run-1/approvals", nil)
	if got.status != http.StatusTooManyRequests || got.code() != webhook.CodeRateLimited || got.header.Get("Retry-After") == "" ||
		!strings.Contains(got.body, "signatures in the window") {
		t.Fatalf("with the replay set full: %d %q Retry-After %q, want 429 rate_limited saying the set is full", got.status, got.body, got.header.Get("Retry-After"))
	}
	// Past 2×skew the set has room again.
	r.f.Clock.Advance(3 * time.Second)
	if got := r.send(t, http.MethodGet, "/runs/run-1/approvals", nil); got.status != http.StatusOK {
		t.Fatalf("after the set emptied: %d %s", got.status, got.body)
	}
}

// A refused request whose declared body never arrives is answered at once
// with Connection: close, not after the server's read timeout; a source
// holding MaxConnectionsPerSource connections gets no more, while another
// source is still served.
func TestServers_SlowBodyIsRefusedAtOnce(t *testing.T) {
	f := fixture.New(t)
	base := liveServer(t, approver.New(f.Store, nil), nil)
	addr := strings.TrimPrefix(base, "http://")
	status, closes, elapsed := slowBody(t, "127.0.0.1", addr, "POST /runs/r/approvals/a/approve HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n{")
	if status != http.StatusUnauthorized || !closes {
		t.Fatalf("an unsigned slow body: %d, Connection: close %v", status, closes)
	}
	t.Logf("unsigned slow body: %d after %s", status, elapsed)
	if elapsed > 4*time.Second {
		t.Fatalf("an unsigned slow body was answered after %s, waiting for its body", elapsed)
	}
	// A declared body over the bound, signed headers.
	req, _ := webhook.NewRequest(context.Background(), secret, time.Now(), http.MethodPost, base, "/runs/r/approvals/a/approve", nil)
	head := fmt.Sprintf("POST /runs/r/approvals/a/approve HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n", webhook.DefaultMaxBody+1)
	for k := range req.Header {
		head += k + ": " + req.Header.Get(k) + "\r\n"
	}
	status, closes, elapsed = slowBody(t, "127.0.0.1", addr, head+"\r\n{")
	if status != http.StatusRequestEntityTooLarge || !closes || elapsed > 4*time.Second {
		t.Fatalf("a declared body over the bound: %d, Connection: close %v, after %s", status, closes, elapsed)
	}
	connectionCaps(t, addr, webhook.MaxConnectionsPerSource)
}

// slowBody sends head (a request's headers and the start of its body)
// from src and reads the response's status and headers, never sending the
// rest of the body.
func slowBody(t *testing.T, src, addr, head string) (status int, closes bool, elapsed time.Duration) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to a slow body: %v", err)
	}
	elapsed = time.Since(start)
	resp.Body.Close()
	// ReadResponse takes "Connection: close" out of the header into Close.
	return resp.StatusCode, resp.Close, elapsed
}

// connectionCaps opens perSource idle connections from 127.0.0.4 and
// checks one more from it is closed at once, while 127.0.0.5 is served.
func connectionCaps(t *testing.T, addr string, perSource int) {
	t.Helper()
	dial := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for i := 0; i < perSource; i++ {
		dial("127.0.0.4")
	}
	// Accepting is asynchronous: the extra connection is closed once the
	// server has counted the others, which it has by the time it answers.
	extra := dial("127.0.0.4")
	extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(extra, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if n, err := extra.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("connection %d from one source was served (%d bytes, %v); the cap is %d", perSource+1, n, err, perSource)
	}
	other := dial("127.0.0.5")
	other.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(other, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(other), nil)
	if err != nil {
		t.Fatalf("another source was not served while one held its cap: %v", err)
	}
	resp.Body.Close()
}
