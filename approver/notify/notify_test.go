package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
	"github.com/agentrt/agentrt/export"
)

func types(ns []notify.Notification) []string {
	var out []string
	for _, n := range ns {
		out = append(out, string(n.Type)+" "+n.RunID)
	}
	return out
}

func decide(t *testing.T, f *fixture.Fixture, approve bool, a agentrt.Approval, note string) error {
	t.Helper()
	l := approver.New(f.Store, nil)
	l.Now = f.Clock.Now
	d := approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: a.Hash, By: "alice", Note: note}
	if approve {
		return l.Approve(context.Background(), d)
	}
	return l.Reject(context.Background(), d)
}

// A notifier stopped and started again on its cursor file sends each
// approval event once: what it sent before the stop is not sent again, and
// what was committed while it was stopped is sent after the restart. The
// cursor file is owner-only and the notification carries the approval's
// facts and no arguments.
func TestNotifier_DeliversOncePerEventAcrossARestart(t *testing.T) {
	f := fixture.New(t)
	s := newSink(t, f.Clock)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL + "/hook?channel=ops", Secret: secret})
	a := f.Start(t, "run-a", fixture.Pay(`{"to":"shop","amount":7}`))
	r.untilIdle()
	got := s.notifications()
	if len(got) != 1 || got[0].Type != notify.Requested {
		t.Fatalf("first run sent %q", types(got))
	}
	n := got[0]
	if n.RunID != "run-a" || n.ApprovalID != a.ID || n.Kind != "payment" || n.Tool != "pay" || n.Hash != a.Hash ||
		!n.ExpiresAt.Equal(a.ExpiresAt) || n.Summary != "pay (payment) needs approval: payments need a person" || n.Arguments != nil {
		t.Fatalf("notification = %+v", n)
	}
	if strings.Contains(string(s.raw[0].body), "arguments") || strings.Contains(string(s.raw[0].body), "shop") {
		t.Fatalf("the arguments were sent without being asked for: %s", s.raw[0].body)
	}

	if err := decide(t, f, true, a, "fine"); err != nil {
		t.Fatal(err)
	}
	b := f.Start(t, "run-b", fixture.Send(`{"to":"b"}`))
	if err := decide(t, f, false, b, "no"); err != nil {
		t.Fatal(err)
	}
	seq := r.untilIdle()
	want := []string{"approval.requested run-a", "approval.approved run-a", "approval.requested run-b", "approval.rejected run-b"}
	if g := types(s.notifications()); strings.Join(g, ",") != strings.Join(want, ",") {
		t.Fatalf("across a restart: %q, want %q", g, want)
	}
	seen := map[string]bool{}
	for _, n := range s.notifications() {
		if seen[n.ID] {
			t.Fatalf("id %s was sent twice", n.ID)
		}
		seen[n.ID] = true
	}
	head, _, _ := f.Store.ChainHead(context.Background())
	if seq != head {
		t.Fatalf("the cursor is at %d, the log at %d", seq, head)
	}
	fi, err := os.Stat(r.cfg.Cursor.(export.FileCursor).Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cursor file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	// A third run with nothing new sends nothing.
	r.untilIdle()
	if len(s.notifications()) != 4 || s.count() != 4 {
		t.Fatalf("an idle restart sent more: %d requests", s.count())
	}
}

// A target answering 500 is tried again after the backoff, doubled, and a
// notification it accepts on the third try is delivered once; the cursor
// passes it only then.
func TestNotifier_RetriesA500ThenDelivers(t *testing.T) {
	f := fixture.New(t)
	s := newSink(t, f.Clock, 500, 503)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL, Secret: secret})
	f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	r.untilIdle()
	if s.count() != 3 || len(s.notifications()) != 1 {
		t.Fatalf("%d requests, %d delivered; want 3 and 1", s.count(), len(s.notifications()))
	}
	if len(r.sleeps) != 2 || r.sleeps[0] != notify.DefaultBackoff || r.sleeps[1] != 2*notify.DefaultBackoff {
		t.Fatalf("backoff = %v", r.sleeps)
	}
	if dl := r.deadLetters(); len(dl) != 0 {
		t.Fatalf("dead letters: %q", dl)
	}
}

// A target that always fails is tried MaxAttempts times with the backoff
// capped at MaxBackoff, and then given up on with one dead-letter line; the
// cursor moves past it so the notifier is not stuck.
func TestNotifier_BackoffIsCappedAndTheLastTryIsADeadLetter(t *testing.T) {
	f := fixture.New(t)
	s := newSink(t, f.Clock, 500, 500, 500, 500, 500, 500)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL + "/hook?token=hidden", Secret: secret})
	r.cfg.MaxAttempts, r.cfg.Backoff, r.cfg.MaxBackoff = 5, time.Second, 3*time.Second
	a := f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	seq := r.untilIdle()
	if s.count() != 5 {
		t.Fatalf("%d attempts, want 5", s.count())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	if len(r.sleeps) != len(want) {
		t.Fatalf("backoff = %v, want %v", r.sleeps, want)
	}
	for i := range want {
		if r.sleeps[i] != want[i] {
			t.Fatalf("backoff = %v, want %v", r.sleeps, want)
		}
	}
	dl := r.deadLetters()
	if len(dl) != 1 || !strings.Contains(dl[0], "type=approval.requested run=run-1 approval="+a.ID) ||
		!strings.Contains(dl[0], "attempts=5: answered 500") || strings.Contains(dl[0], "hidden") {
		t.Fatalf("dead letters = %q", dl)
	}
	if head, _, _ := f.Store.ChainHead(context.Background()); seq != head {
		t.Fatalf("cursor %d, head %d", seq, head)
	}
}

// A target answering 302 is not followed: the server it points to hears
// nothing, the notification is not retried, and it is a dead letter.
func TestNotifier_DoesNotFollowARedirect(t *testing.T) {
	f := fixture.New(t)
	elsewhere := newSink(t, f.Clock)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.srv.URL+"/stolen", http.StatusFound)
	}))
	defer redirect.Close()
	r := newRunner(t, f, notify.Target{URL: redirect.URL, Secret: secret})
	f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	r.untilIdle()
	if elsewhere.count() != 0 {
		t.Fatalf("the redirect was followed: %d requests elsewhere", elsewhere.count())
	}
	if dl := r.deadLetters(); len(dl) != 1 || !strings.Contains(dl[0], "attempts=1: answered 302, a redirect") {
		t.Fatalf("dead letters = %q", dl)
	}
	if len(r.sleeps) != 0 {
		t.Fatalf("a redirect was retried: %v", r.sleeps)
	}
}

// New refuses plain http to a host that is not loopback, a URL with a
// password, a weak secret and a missing cursor; https anywhere and http
// to localhost or a loopback address are accepted.
func TestNew_RefusesPlainHTTPToANonLoopbackHost(t *testing.T) {
	f := fixture.New(t)
	cfg := func(url string) notify.Config {
		return notify.Config{Store: f.Store, Cursor: &export.MemCursor{}, Targets: []notify.Target{{URL: url, Secret: secret}}}
	}
	for _, bad := range []string{"http://example.com/hook", "http://10.0.0.1/hook", "http://127.0.0.1.nip.io/hook",
		"http://localhost.example.com/", "ftp://127.0.0.1/", "https://user:pw@example.com/", "//example.com/", "https://example.com/#x"} {
		if _, err := notify.New(cfg(bad)); !errors.Is(err, agentrt.ErrInvalidConfig) || !strings.Contains(err.Error(), "Targets[0].URL") {
			t.Fatalf("New(%s) = %v", bad, err)
		}
	}
	for _, ok := range []string{"https://example.com/hook", "http://localhost:8080/hook", "http://127.0.0.1:9/x", "http://[::1]:9/x"} {
		if _, err := notify.New(cfg(ok)); err != nil {
			t.Fatalf("New(%s) = %v", ok, err)
		}
	}
	c := cfg("https://example.com/")
	c.Targets[0].Secret = secret[:31]
	if _, err := notify.New(c); err == nil || !strings.Contains(err.Error(), "Targets[0].Secret") {
		t.Fatalf("a weak secret = %v", err)
	}
	c = cfg("https://example.com/")
	c.Cursor = nil
	if _, err := notify.New(c); err == nil || !strings.Contains(err.Error(), "Cursor") {
		t.Fatalf("no cursor = %v", err)
	}
}

// A receiver accepts a notification once: the same request again is a
// replay, and one altered in its body or path, signed under another
// secret, or past the skew does not verify.
func TestReceiver_DetectsAForgedOrReplayedNotification(t *testing.T) {
	f := fixture.New(t)
	s := newSink(t, f.Clock)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL + "/hook", Secret: secret})
	f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	r.untilIdle()
	if len(s.raw) != 1 {
		t.Fatalf("%d requests", len(s.raw))
	}
	c := s.raw[0]
	req := func(path string, body []byte, h http.Header) *http.Request {
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.Header = h.Clone()
		return r
	}
	fresh := func() *notify.Receiver {
		rc, err := notify.NewReceiver(secret)
		if err != nil {
			t.Fatal(err)
		}
		rc.Now = f.Clock.Now
		return rc
	}
	if _, err := s.receiver.Verify(req(c.path, c.body, c.header)); !errors.Is(err, notify.ErrReplay) {
		t.Fatalf("a replay = %v, want ErrReplay", err)
	}
	forged := bytes.Replace(c.body, []byte(`"run-1"`), []byte(`"run-2"`), 1)
	if _, err := fresh().Verify(req(c.path, forged, c.header)); !errors.Is(err, notify.ErrSignature) {
		t.Fatalf("an altered body = %v, want ErrSignature", err)
	}
	if _, err := fresh().Verify(req("/other", c.body, c.header)); !errors.Is(err, notify.ErrSignature) {
		t.Fatalf("another path = %v, want ErrSignature", err)
	}
	other, _ := notify.NewReceiver([]byte("another secret of at least 32 bytes"))
	other.Now = f.Clock.Now
	if _, err := other.Verify(req(c.path, c.body, c.header)); !errors.Is(err, notify.ErrSignature) {
		t.Fatalf("another secret = %v, want ErrSignature", err)
	}
	late := fresh()
	late.Now = func() time.Time { return f.Clock.Now().Add(notify.DefaultSkew + time.Second) }
	if _, err := late.Verify(req(c.path, c.body, c.header)); !errors.Is(err, notify.ErrSignature) {
		t.Fatalf("past the skew = %v, want ErrSignature", err)
	}
	if n, err := fresh().Verify(req(c.path, c.body, c.header)); err != nil || n.RunID != "run-1" {
		t.Fatalf("the original, to a receiver that has not seen it = %+v, %v", n, err)
	}
}

// With IncludeArguments the arguments are sent, bounded; the summary
// escapes what a person or a policy chose.
func TestNotifier_SendsArgumentsOnlyWhenAskedAndEscapesTheSummary(t *testing.T) {
	f := fixture.New(t)
	s := newSink(t, f.Clock)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL, Secret: secret})
	r.cfg.IncludeArguments = true
	a := f.Start(t, "run-1", fixture.Send(`{"to":"`+strings.Repeat("x", 5000)+`"}`))
	if err := decide(t, f, false, a, "\u202eno\x1b[2J"+strings.Repeat("!", 2000)); err != nil {
		t.Fatal(err)
	}
	r.untilIdle()
	got := s.notifications()
	if len(got) != 2 || got[1].Type != notify.Rejected {
		t.Fatalf("sent %q", types(got))
	}
	var args map[string]string
	if err := json.Unmarshal(got[0].Arguments, &args); err != nil || !strings.HasPrefix(args["to"], "xxx") || len(args["to"]) >= 5000 {
		t.Fatalf("arguments = %d bytes, %v", len(got[0].Arguments), err)
	}
	sum := got[1].Summary
	if strings.ContainsAny(sum, "\u202e\x1b") || !strings.Contains(sum, `\u{202E}no\u{001B}[2J`) || len(sum) > notify.MaxSummary {
		t.Fatalf("summary = %q (%d bytes)", sum, len(sum))
	}
}
