package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/internal/enginekit"
)

// loginBegin posts a sign-in start from remote and returns the status.
func loginBegin(h *console.Handler, remote string) int {
	req := httptest.NewRequest("POST", "/api/login/begin", strings.NewReader("{}"))
	req.RemoteAddr = remote
	req.Header.Set("Origin", "http://localhost:7380")
	req.Header.Set("X-CSRF-Token", "t")
	req.AddCookie(&http.Cookie{Name: "agentrt_csrf", Value: "t"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// The sign-in limiter counts an IPv6 /64 as one source, so the addresses
// of one /64 share one allowance while another /64 has its own; past its
// capacity it forgets the oldest source under its limit first, so a flood
// of new sources does not reset a source at its limit.
func TestHandler_SignInLimiterKeysIPv6By64AndEvictsOldestFirst(t *testing.T) {
	c := enginekit.ClockAt(consoleT0)
	h := newHandler(t, openStore(t), func(cfg *console.Config) { cfg.AuthRate, cfg.Now = 3, c.Now })
	for i := 1; i <= 3; i++ {
		if code := loginBegin(h, fmt.Sprintf("[2001:db8:0:1::%x]:1234", i)); code != http.StatusOK {
			t.Fatalf("attempt %d from the /64: %d", i, code)
		}
	}
	if code := loginBegin(h, "[2001:db8:0:1:ffff:ffff:ffff:ffff]:1"); code != http.StatusTooManyRequests {
		t.Fatalf("a fourth address of the same /64: %d, want 429", code)
	}
	if code := loginBegin(h, "[2001:db8:0:2::1]:1"); code != http.StatusOK {
		t.Fatalf("another /64: %d", code)
	}
	// A flood of more new sources than the limiter keeps, each once, a
	// second later: they forget one another, not the /64 at its limit.
	c.Advance(time.Second)
	for i := 0; i < 10001; i++ {
		loginBegin(h, fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255))
	}
	if code := loginBegin(h, "[2001:db8:0:1::9]:1"); code != http.StatusTooManyRequests {
		t.Fatalf("the /64 at its limit after 10,001 other sources: %d, want still 429", code)
	}
	// The window passes: a fresh allowance.
	c.Advance(time.Minute)
	if code := loginBegin(h, "[2001:db8:0:1::9]:1"); code != http.StatusOK {
		t.Fatalf("after the minute: %d", code)
	}
}

// Begun ceremonies are bounded: each sign-in start stores one, expired
// ones are dropped as new ones come, and past the bound the oldest goes.
func TestHandler_CeremoniesAreBoundedAndExpire(t *testing.T) {
	c := enginekit.ClockAt(consoleT0)
	h := newHandler(t, openStore(t), func(cfg *console.Config) { cfg.AuthRate, cfg.Now = 1_000_000, c.Now })
	for i := 0; i < 10; i++ {
		loginBegin(h, "192.0.2.1:1")
	}
	if n := console.Ceremonies(h); n != 10 {
		t.Fatalf("%d ceremonies held, want 10", n)
	}
	c.Advance(3 * time.Minute) // past their lifetime
	loginBegin(h, "192.0.2.1:1")
	if n := console.Ceremonies(h); n != 1 {
		t.Fatalf("%d ceremonies held after the others expired, want 1", n)
	}
	for i := 0; i < 10005; i++ {
		loginBegin(h, "192.0.2.1:1")
	}
	if n := console.Ceremonies(h); n != 10000 {
		t.Fatalf("%d ceremonies held, want the bound of 10000", n)
	}
}

// A refused sign-in tells the client one generic sentence, not the
// passkey library's reason.
func TestHandler_SignInErrorIsGeneric(t *testing.T) {
	var log strings.Builder
	h := newHandler(t, openStore(t), func(cfg *console.Config) { cfg.ErrorLog = newLogger(&log) })
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/api/login/begin", strings.NewReader("{}"))
	req.Header.Set("Origin", "http://localhost:7380")
	req.Header.Set("X-CSRF-Token", "t")
	req.AddCookie(&http.Cookie{Name: "agentrt_csrf", Value: "t"})
	h.ServeHTTP(rec, req)
	var begun struct{ Ceremony string }
	if err := jsonDecode(rec.Body.String(), &begun); err != nil || begun.Ceremony == "" {
		t.Fatalf("login begin: %d %s", rec.Code, rec.Body.String())
	}
	// A forged assertion naming a credential nobody enrolled.
	forged := `{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"AAAA","signature":"AAAA","userHandle":"AAAA"}}`
	req = httptest.NewRequest("POST", "/api/login/finish", strings.NewReader(forged))
	req.Header.Set("Origin", "http://localhost:7380")
	req.Header.Set("X-CSRF-Token", "t")
	req.Header.Set("X-Ceremony", begun.Ceremony)
	req.AddCookie(&http.Cookie{Name: "agentrt_csrf", Value: "t"})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"the passkey did not sign in"`) {
		t.Fatalf("a forged sign-in: %d %s, want 403 with the one generic sentence", rec.Code, rec.Body.String())
	}
	if !strings.Contains(log.String(), "a sign-in was refused") {
		t.Fatalf("the server log does not hold the reason: %q", log.String())
	}
}

// BenchmarkLoginBegin serves a sign-in start with no ceremonies held and
// with 10,000 held: finding room for a new one is O(1), so the two cost
// the same (before, each start scanned every held ceremony under the
// lock).
func BenchmarkLoginBegin(b *testing.B) {
	for _, held := range []int{0, 9999} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			h := newHandler(b, openStore(b), func(cfg *console.Config) { cfg.AuthRate = 1 << 30 })
			for i := 0; i < held; i++ {
				loginBegin(h, "192.0.2.1:1")
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if code := loginBegin(h, "192.0.2.1:1"); code != http.StatusOK {
					b.Fatal(code)
				}
			}
		})
	}
}
