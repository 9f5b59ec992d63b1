package console_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// consoleT0 is where every session clock starts.
var consoleT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// countingStore is a real store that counts the reads a live stream makes.
type countingStore struct {
	agentrt.Store
	heads atomic.Int64
}

func (s *countingStore) ChainHead(ctx context.Context) (int64, string, error) {
	s.heads.Add(1)
	return s.Store.ChainHead(ctx)
}

// sessionRig is a console on a real database file, served on loopback,
// with a settable clock and one signed-in approver.
type sessionRig struct {
	t      *testing.T
	path   string
	store  *countingStore
	clock  *enginekit.FakeClock
	h      *console.Handler
	srv    *httptest.Server
	cookie *http.Cookie
}

func newSessionRig(t *testing.T, mod func(*console.Config)) *sessionRig {
	t.Helper()
	st, path := testrig.DB(t)
	r := &sessionRig{t: t, path: path, store: &countingStore{Store: st}, clock: enginekit.ClockAt(consoleT0)}
	cfg := console.DefaultConfig(r.store, "http://localhost:7380")
	cfg.Now = r.clock.Now
	cfg.PollInterval = 20 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	var err error
	if r.h, err = console.New(cfg); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(r.h)
	t.Cleanup(r.srv.Close)
	r.cookie = console.NewTestSession(r.h, "alice")
	return r
}

// get fetches a page with the session's cookie, following no redirect.
func (r *sessionRig) get(path string) *http.Response {
	return r.serve(httptest.NewRequest("GET", path, nil))
}

// post submits form to path as the console's own pages do (same origin,
// form-encoded) with the session's cookie, following no redirect.
func (r *sessionRig) post(path, form string) *http.Response {
	req := httptest.NewRequest("POST", path, strings.NewReader(form))
	req.Header.Set("Origin", "http://localhost:7380")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r.serve(req)
}

func (r *sessionRig) serve(req *http.Request) *http.Response {
	req.AddCookie(r.cookie)
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return rec.Result()
}

// signedIn reports whether the inbox is served (not a redirect to /login).
func (r *sessionRig) signedIn() bool {
	r.t.Helper()
	resp := r.get("/")
	switch {
	case resp.StatusCode == http.StatusOK:
		return true
	case resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") == "/login":
		return false
	}
	r.t.Fatalf("the inbox answered %d", resp.StatusCode)
	return false
}

// stream is an open /events stream, its lines read as they come.
type stream struct {
	resp  *http.Response
	lines chan string // closed when the stream ends
}

func (r *sessionRig) openStream() *stream {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.srv.URL+"/events", nil)
	req.AddCookie(r.cookie)
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	s := &stream{resp: resp, lines: make(chan string, 1024)}
	r.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		close(s.lines)
		return s
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	return s
}

// waitEnded waits for the stream's "ended" event and its close.
func (s *stream) waitEnded(t *testing.T, what string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	sawEnded := false
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				if !sawEnded {
					t.Fatalf("%s: the stream closed without an ended event", what)
				}
				return
			}
			if l == "event: ended" {
				sawEnded = true
			}
		case <-deadline:
			t.Fatalf("%s: the stream is still open after 10s (ended event seen: %v)", what, sawEnded)
		}
	}
}

// stillOpen checks the stream delivers no end for a while.
func (s *stream) stillOpen(t *testing.T, what string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok || l == "event: ended" {
				t.Fatalf("%s: the stream ended early", what)
			}
		case <-deadline:
			return
		}
	}
}

// Removing an approver (from another store handle, as the CLI or another
// console process would) ends their session at their next request, and an
// open stream of theirs within one poll; a state change with the old
// session is refused.
func TestConsole_RemovedApproverSessionEnds(t *testing.T) {
	remove := func(t *testing.T, r *sessionRig) {
		other, err := sqlite.Open(r.path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := (agentrt.Operator{Store: other}).RemoveApprover(context.Background(), "alice", "admin"); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("request", func(t *testing.T) {
		r := newSessionRig(t, nil)
		if !r.signedIn() {
			t.Fatal("the new session is not signed in")
		}
		remove(t, r)
		if r.signedIn() {
			t.Fatal("a removed approver's session still serves the inbox")
		}
		for _, p := range []string{"/runs", "/chain", "/runs/run-1"} {
			if resp := r.get(p); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("%s after the removal: %d, want a redirect to /login", p, resp.StatusCode)
			}
		}
		if code := r.post("/runs/run-1/cancel", "note=x").StatusCode; code != http.StatusUnauthorized {
			t.Errorf("a cancel with the removed approver's session: %d, want 401", code)
		}
	})
	t.Run("stream", func(t *testing.T) {
		r := newSessionRig(t, nil)
		s := r.openStream()
		if s.resp.StatusCode != http.StatusOK {
			t.Fatalf("the stream answered %d", s.resp.StatusCode)
		}
		s.stillOpen(t, "before the removal", 100*time.Millisecond)
		remove(t, r)
		// No request is made: the shared poll reads the removal.
		s.waitEnded(t, "after the removal")
		if again := r.openStream(); again.resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a new stream after the removal: %d, want 401", again.resp.StatusCode)
		}
	})
}

// A session used every 14 minutes still ends at its absolute lifetime.
func TestConsole_SessionHasAnAbsoluteLifetime(t *testing.T) {
	r := newSessionRig(t, func(c *console.Config) { c.SessionLifetime = 2 * time.Hour })
	for elapsed := time.Duration(0); elapsed+14*time.Minute < 2*time.Hour; elapsed += 14 * time.Minute {
		r.clock.Advance(14 * time.Minute)
		if !r.signedIn() {
			t.Fatalf("the session ended %s after sign-in, before its lifetime", elapsed+14*time.Minute)
		}
	}
	r.clock.Advance(14 * time.Minute) // 2h06m
	if r.signedIn() {
		t.Fatal("a session touched every 14 minutes outlived its 2h lifetime")
	}
	// The cookie lasts no longer than the server's session.
	if c := console.NewTestSession(r.h, "bob"); c.MaxAge != int((2 * time.Hour).Seconds()) {
		t.Errorf("the cookie's MaxAge is %ds, want the lifetime", c.MaxAge)
	}
}

// A session unused for its idle timeout ends; one used just inside it
// does not.
func TestConsole_IdleTimeoutEndsTheSession(t *testing.T) {
	r := newSessionRig(t, func(c *console.Config) { c.IdleTimeout = 15 * time.Minute })
	r.clock.Advance(15*time.Minute - time.Second)
	if !r.signedIn() {
		t.Fatal("the session ended inside its idle timeout")
	}
	r.clock.Advance(15 * time.Minute)
	if r.signedIn() {
		t.Fatal("a session idle for 15 minutes still serves the inbox")
	}
	// Ended means gone: coming back within the timeout does not revive it.
	r.clock.Advance(-10 * time.Minute)
	if r.signedIn() {
		t.Fatal("an idled-out session came back")
	}
}

// A stream ends with its session: at sign-out, at the idle timeout (an
// open stream is not use), and at the lifetime. A session holds at most
// StreamsPerSession streams, and every stream of the process shares one
// poll of the store.
func TestConsole_EventStreamEndsWithItsSession(t *testing.T) {
	t.Run("sign-out", func(t *testing.T) {
		r := newSessionRig(t, nil)
		s := r.openStream()
		s.stillOpen(t, "before signing out", 100*time.Millisecond)
		csrf := csrfOf(t, r)
		if code := r.post("/logout", "csrf="+csrf).StatusCode; code != http.StatusSeeOther {
			t.Fatalf("sign-out: %d", code)
		}
		s.waitEnded(t, "after signing out")
	})
	t.Run("idle", func(t *testing.T) {
		r := newSessionRig(t, nil)
		s := r.openStream()
		s.stillOpen(t, "inside the idle timeout", 100*time.Millisecond)
		r.clock.Advance(15 * time.Minute)
		s.waitEnded(t, "at the idle timeout")
	})
	t.Run("lifetime", func(t *testing.T) {
		r := newSessionRig(t, func(c *console.Config) { c.SessionLifetime = time.Hour })
		s := r.openStream()
		for i := 0; i < 4; i++ {
			r.clock.Advance(14 * time.Minute)
			if !r.signedIn() {
				t.Fatal("the session ended early")
			}
		}
		s.stillOpen(t, "inside the lifetime", 60*time.Millisecond)
		r.clock.Advance(5 * time.Minute)
		s.waitEnded(t, "at the lifetime")
	})
	t.Run("cap and one poll", func(t *testing.T) {
		r := newSessionRig(t, func(c *console.Config) { c.StreamsPerSession = 3 })
		var open []*stream
		for i := 0; i < 3; i++ {
			s := r.openStream()
			if s.resp.StatusCode != http.StatusOK {
				t.Fatalf("stream %d: %d", i+1, s.resp.StatusCode)
			}
			open = append(open, s)
		}
		if s := r.openStream(); s.resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a fourth stream of one session: %d, want 429", s.resp.StatusCode)
		}
		before, polls0 := r.store.heads.Load(), console.Polls(r.h)
		time.Sleep(500 * time.Millisecond)
		reads, polls := r.store.heads.Load()-before, console.Polls(r.h)-polls0
		if polls < 5 {
			t.Fatalf("only %d shared polls in 500ms at a 20ms interval", polls)
		}
		// One read of the chain head per shared poll, not one per stream.
		if reads > polls+1 {
			t.Fatalf("%d chain-head reads for %d polls of 3 streams: the streams poll the store each", reads, polls)
		}
		open[0].resp.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			s := r.openStream()
			if s.resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a closed stream's slot was not given back: %d", s.resp.StatusCode)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func csrfOf(t *testing.T, r *sessionRig) string {
	t.Helper()
	resp := r.get("/")
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	body := b.String()
	i := strings.Index(body, `name="csrf" content="`)
	if i < 0 {
		t.Fatalf("no CSRF token in the inbox:\n%.500s", body)
	}
	rest := body[i+len(`name="csrf" content="`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// Every page that shows approvals, runs or the chain is no-store, not only
// the sign-in page.
func TestConsole_ApprovalPagesAreNoStore(t *testing.T) {
	r := newSessionRig(t, nil)
	ctx := context.Background()
	at := r.clock.Now()
	_, err := r.store.Update(ctx, func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: "run-1", Status: agentrt.RunWaiting, CreatedAt: at, Limits: agentrt.DefaultLimits()}); err != nil {
			return err
		}
		a := agentrt.Approval{ID: "ap-1", RunID: "run-1", StepID: "s", Kind: "write",
			Capability: []byte(`{}`), Presentation: []byte(`{}`),
			Request: agentrt.ToolRequest{Spec: agentrt.ToolSpec{Name: "write_note"}, Args: []byte(`{"name":"x"}`)},
			Status:  agentrt.ApprovalPending, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		a.Hash, _ = agentrt.ApprovalHash(a.Kind, a.Capability, a.Presentation, a.Request)
		return tx.ApprovalInsert(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/?page=2", "/runs", "/runs?status=WAITING_FOR_APPROVAL", "/runs/run-1", "/runs/run-1/approvals/ap-1", "/chain", "/login", "/enroll"} {
		resp := r.get(p)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", p, resp.StatusCode)
			continue
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", p, cc)
		}
	}
}
