package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// openStore is a fresh runs database, closed when t ends.
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, _ := testrig.DB(t)
	return st
}

// newHandler is a console over st with the default configuration as mod
// changes it (nil: as it is); a refusal fails t.
func newHandler(t testing.TB, st agentrt.Store, mod func(*console.Config)) *console.Handler {
	t.Helper()
	cfg := console.DefaultConfig(st, "http://localhost:7380")
	if mod != nil {
		mod(&cfg)
	}
	h, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// signedIn is a console over st with its default configuration and a
// session of alice's: it GETs a path as alice, following no redirect.
func signedIn(t testing.TB, st agentrt.Store) func(path string) *httptest.ResponseRecorder {
	t.Helper()
	h := newHandler(t, st, nil)
	cookie := console.NewTestSession(h, "alice")
	return func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
}

// New refuses an origin a passkey cannot be scoped to or that is not a
// secure context, naming the field.
func TestNew_RefusesOriginsPasskeysCannotUse(t *testing.T) {
	st := openStore(t)
	for _, o := range []string{"", "localhost:7380", "http://127.0.0.1:7380", "http://example.com", "http://localhost:7380/console", "ftp://localhost"} {
		_, err := console.New(console.DefaultConfig(st, o))
		var ce *agentrt.ConfigError
		if !errors.As(err, &ce) || ce.Field != "console.Config.Origin" {
			t.Errorf("origin %q: %v, want a ConfigError naming console.Config.Origin", o, err)
		}
	}
	for _, o := range []string{"http://localhost:7380", "https://console.example.com"} {
		if _, err := console.New(console.DefaultConfig(st, o)); err != nil {
			t.Errorf("origin %q: %v", o, err)
		}
	}
}

// Every response carries the strict CSP (no inline script or style, no
// framing), nosniff and no-referrer; pages need a session; a POST without
// the console's Origin or the CSRF token is 403 with a JSON {error, code};
// the sign-in endpoints are rate limited.
func TestHandler_HeadersSessionsCSRFAndRateLimit(t *testing.T) {
	st := openStore(t)
	h := newHandler(t, st, func(cfg *console.Config) { cfg.AuthRate = 5 }) // the two refused posts below count too
	get := func(path string) *http.Response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Result()
	}
	for _, p := range []string{"/login", "/", "/static/app.js", "/nope"} {
		r := get(p)
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: nosniff %q referrer %q", p, r.Header.Get("X-Content-Type-Options"), r.Header.Get("Referrer-Policy"))
		}
	}
	if r := get("/"); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/login" {
		t.Errorf("the inbox without a session: %d to %q, want a redirect to /login", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get("/login"); r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the sign-in page is cacheable: %q", r.Header.Get("Cache-Control"))
	}
	post := func(path, origin, token string) (int, string) {
		req := httptest.NewRequest("POST", path, strings.NewReader("{}"))
		req.RemoteAddr = "192.0.2.1:1234"
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("X-CSRF-Token", token)
		req.AddCookie(&http.Cookie{Name: "agentrt_csrf", Value: "t"})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct{ Code string }
		json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body.Code
	}
	if code, c := post("/api/login/begin", "http://evil.test", "t"); code != http.StatusForbidden || c != console.CodeForbidden {
		t.Errorf("foreign origin: %d %q", code, c)
	}
	if code, c := post("/api/login/begin", "http://localhost:7380", ""); code != http.StatusForbidden || c != console.CodeForbidden {
		t.Errorf("no token: %d %q", code, c)
	}
	if code, _ := post("/api/decide/begin", "http://localhost:7380", "t"); code != http.StatusUnauthorized {
		t.Errorf("a decision without a session: %d, want 401", code)
	}
	// Five attempts a minute from one address, refused ones included; the sixth is refused.
	for i := 0; i < 3; i++ {
		if code, _ := post("/api/login/begin", "http://localhost:7380", "t"); code != http.StatusOK {
			t.Fatalf("sign-in %d: %d", i, code)
		}
	}
	if code, c := post("/api/login/begin", "http://localhost:7380", "t"); code != http.StatusTooManyRequests || c != console.CodeRateLimited {
		t.Errorf("the sixth attempt: %d %q, want 429", code, c)
	}
}

// BenchmarkInbox_10000Waiting serves the inbox's first page with 10,000
// approvals waiting across runs: one bounded page from the
// approvals_waiting index and a count.
func BenchmarkInbox_10000Waiting(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for chunk := 0; chunk < 10; chunk++ {
		_, err := st.Update(ctx, func(tx agentrt.Tx) error {
			for i := 0; i < 1000; i++ {
				n := chunk*1000 + i
				run := fmt.Sprintf("run-%05d", n)
				if err := tx.RunInsert(agentrt.Run{ID: run, Status: agentrt.RunWaiting, CreatedAt: at, Limits: agentrt.DefaultLimits()}); err != nil {
					return err
				}
				if err := tx.ApprovalInsert(agentrt.Approval{ID: fmt.Sprintf("ap-%05d", n), RunID: run, StepID: "s", Kind: "write",
					Capability: json.RawMessage(`{}`), Presentation: json.RawMessage(`{}`),
					Request: agentrt.ToolRequest{Spec: agentrt.ToolSpec{Name: "write_note"}, Args: json.RawMessage(`{"name":"x"}`)},
					Hash:    "h", Status: agentrt.ApprovalPending, CreatedAt: at.Add(time.Duration(n) * time.Second), ExpiresAt: at.Add(48 * time.Hour)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	h := newHandler(b, st, nil)
	cookie := console.NewTestSession(h, "bench")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("GET", "/", nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "page 1 of 200") {
			b.Fatalf("inbox: %d %.300s", rec.Code, rec.Body.String())
		}
	}
}

// The runs page shows one status alone when asked (?status=), pages within
// it with the filter kept in the links, shows every run without it, and
// refuses a status that is not one.
func TestHandler_RunsPageFiltersByStatus(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	runs := map[string]agentrt.RunStatus{"run-done-1": agentrt.RunCompleted, "run-done-2": agentrt.RunCompleted, "run-done-3": agentrt.RunCompleted,
		"run-live": agentrt.RunRunning, "run-failed": agentrt.RunFailed}
	for _, id := range []string{"run-done-1", "run-live", "run-done-2", "run-failed", "run-done-3"} {
		r := agentrt.Run{ID: id, Goal: "goal of " + id, Status: runs[id], Limits: agentrt.DefaultLimits(), CreatedAt: t0, StartedAt: t0}
		if _, err := st.Update(context.Background(), func(tx agentrt.Tx) error { return tx.RunInsert(r) }); err != nil {
			t.Fatal(err)
		}
	}
	h := newHandler(t, st, func(cfg *console.Config) { cfg.PageSize = 2 })
	cookie := console.NewTestSession(h, "alice")
	get := func(path string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := get("/runs?status=COMPLETED")
	if code != http.StatusOK || !strings.Contains(body, "goal of run-done-3") || !strings.Contains(body, "goal of run-done-2") ||
		strings.Contains(body, "goal of run-live") || strings.Contains(body, "goal of run-failed") || strings.Contains(body, "goal of run-done-1") {
		t.Fatalf("completed, page 1: %d\n%s", code, body)
	}
	if !strings.Contains(body, `href="/runs?status=COMPLETED&amp;page=2"`) || !strings.Contains(body, "(3)") {
		t.Fatalf("completed, page 1 does not page within the status:\n%s", body)
	}
	if code, body = get("/runs?status=COMPLETED&page=2"); code != http.StatusOK || !strings.Contains(body, "goal of run-done-1") || strings.Contains(body, "goal of run-done-2") {
		t.Fatalf("completed, page 2: %d\n%s", code, body)
	}
	if code, body = get("/runs"); code != http.StatusOK || !strings.Contains(body, "(5)") {
		t.Fatalf("every run: %d\n%s", code, body)
	}
	if code, _ = get("/runs?status=DONE"); code != http.StatusBadRequest {
		t.Fatalf("a status that is not one: %d, want 400", code)
	}
}
