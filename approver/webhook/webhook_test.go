package webhook_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/webhook"
)

// A signed read is answered; the same request again is refused as a
// replay; a timestamp one second past the skew either way, a signature
// under another secret, a tampered path or body, a nonce that could carry
// a newline, and an unsigned request are each refused with 401 before
// anything is read from the store or decided.
func TestHandler_SignatureSkewAndReplay(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	req := r.signed(t, http.MethodGet, showPath(a), nil)
	again := req.Clone(context.Background())
	if got := r.do(t, req); got.status != http.StatusOK {
		t.Fatalf("a signed show = %d %s", got.status, got.body)
	}
	if got := r.do(t, again); got.status != http.StatusUnauthorized || !strings.Contains(got.body, "seen before") {
		t.Fatalf("a replayed show = %d %s, want 401 seen before", got.status, got.body)
	}

	body, _ := json.Marshal(decision(a, "alice"))
	at := func(offset time.Duration) *http.Request {
		req, err := webhook.NewRequest(context.Background(), secret, r.f.Clock.Now().Add(offset), http.MethodPost, r.srv.URL, approvePath(a), body)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	before := r.f.Take(t)
	for name, req := range map[string]*http.Request{
		"a timestamp past the skew":   at(webhook.DefaultSkew + time.Second),
		"a timestamp before the skew": at(-webhook.DefaultSkew - time.Second),
	} {
		if got := r.do(t, req); got.status != http.StatusUnauthorized || got.code() != webhook.CodeUnauthorized {
			t.Fatalf("%s: %d %s", name, got.status, got.body)
		}
	}
	forge := func(mutate func(req *http.Request)) *http.Request {
		req := at(0)
		mutate(req)
		return req
	}
	cases := map[string]*http.Request{
		"another secret": forge(func(req *http.Request) {
			ts, _ := strconv.ParseInt(req.Header.Get(webhook.HeaderTimestamp), 10, 64)
			req.Header.Set(webhook.HeaderSignature, webhook.Sign([]byte("an-attackers-secret-of-32-bytes!!"), ts, req.Header.Get(webhook.HeaderNonce), "POST", approvePath(a), body))
		}),
		"a tampered path": forge(func(req *http.Request) { req.URL.Path = rejectPath(a) }),
		"a tampered body": forge(func(req *http.Request) {
			b := bytes.Replace(body, []byte("alice"), []byte("mallo"), 1)
			req.Body, req.ContentLength = newReadFlag(b), int64(len(b))
		}),
		"a nonce with a space": forge(func(req *http.Request) { req.Header.Set(webhook.HeaderNonce, "a b") }),
		"no signature":         forge(func(req *http.Request) { req.Header.Del(webhook.HeaderSignature) }),
		"a signature without v1": forge(func(req *http.Request) {
			req.Header.Set(webhook.HeaderSignature, strings.TrimPrefix(req.Header.Get(webhook.HeaderSignature), "v1="))
		}),
	}
	for name, req := range cases {
		if got := r.do(t, req); got.status != http.StatusUnauthorized || got.code() != webhook.CodeUnauthorized {
			t.Fatalf("%s: %d %s", name, got.status, got.body)
		}
	}
	r.f.Unchanged(t, before, "refused signatures")

	// Within the skew a signed decision is accepted, once.
	ok := at(webhook.DefaultSkew - time.Second)
	replay := ok.Clone(context.Background())
	replay.Body = newReadFlag(body)
	if got := r.do(t, ok); got.status != http.StatusAccepted {
		t.Fatalf("a decision inside the skew = %d %s", got.status, got.body)
	}
	if got := r.do(t, replay); got.status != http.StatusUnauthorized || !strings.Contains(got.body, "seen before") {
		t.Fatalf("a replayed decision = %d %s", got.status, got.body)
	}
}

// New refuses a secret under 32 bytes and every bound out of range, naming
// the field.
func TestNew_RefusesAWeakConfig(t *testing.T) {
	l := approver.New(fixture.New(t).Store, nil)
	for field, mod := range map[string]func(*webhook.Config){
		"Approver": func(c *webhook.Config) { c.Approver = nil },
		"Secret":   func(c *webhook.Config) { c.Secret = secret[:31] },
		"Skew":     func(c *webhook.Config) { c.Skew = time.Hour },
		"Rate":     func(c *webhook.Config) { c.Rate = -1 },
		"Burst":    func(c *webhook.Config) { c.Burst = -1 },
		"MaxBody":  func(c *webhook.Config) { c.MaxBody = 1 << 30 },
		"Limit":    func(c *webhook.Config) { c.Limit = approver.MaxPending + 1 },
	} {
		cfg := webhook.DefaultConfig(l, secret)
		mod(&cfg)
		_, err := webhook.New(cfg)
		if !errors.Is(err, agentrt.ErrInvalidConfig) || !strings.Contains(err.Error(), "webhook.Config."+field) {
			t.Fatalf("%s: New = %v", field, err)
		}
	}
	if _, err := webhook.New(webhook.DefaultConfig(l, secret)); err != nil {
		t.Fatalf("DefaultConfig is refused: %v", err)
	}
}

// A body over MaxBody is refused with 413: by its Content-Length without
// reading it, and when its length is not declared, after reading no more
// than MaxBody+1 bytes. Past the burst a signed request is refused with
// 429; an unsigned one is refused with 401 before its body is read and
// spends nothing of the burst; when the clock has refilled the bucket the
// same decision goes through.
func TestHandler_BodyAndRateBounds(t *testing.T) {
	r := newRig(t, func(c *webhook.Config) { c.Burst = 3; c.Rate = 1 })
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	big := append(bytes.Repeat([]byte(" "), webhook.DefaultMaxBody), []byte(`{}`)...)
	before := r.f.Take(t)
	if got := r.send(t, http.MethodPost, approvePath(a), big); got.status != http.StatusRequestEntityTooLarge || got.code() != webhook.CodeBodyTooLarge {
		t.Fatalf("a body over the bound = %d %s", got.status, got.body)
	}
	// Undeclared length, straight to the handler so the read is seen; the
	// headers are signed (over another body), so the body must be read.
	h, err := webhook.New(webhook.Config{Approver: r.local, Secret: secret, Now: r.f.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingReader{r: bytes.NewReader(append(big, bytes.Repeat([]byte(" "), 1<<20)...))}
	req := httptest.NewRequest(http.MethodPost, approvePath(a), counted)
	req.Header = r.signed(t, http.MethodPost, approvePath(a), nil).Header
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || counted.n > webhook.DefaultMaxBody+1 {
		t.Fatalf("an undeclared body over the bound = %d after reading %d bytes", rec.Code, counted.n)
	}
	declared := newReadFlag(big)
	req = httptest.NewRequest(http.MethodPost, approvePath(a), declared)
	req.Header = r.signed(t, http.MethodPost, approvePath(a), nil).Header
	req.ContentLength = int64(len(big))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || declared.read || rec.Header().Get("Connection") != "close" {
		t.Fatalf("a declared body over the bound = %d, read %v, Connection %q", rec.Code, declared.read, rec.Header().Get("Connection"))
	}

	// The first request above spent nothing (it was refused before its
	// signature was checked): three tokens are left.
	for i := 0; i < 3; i++ {
		if got := r.send(t, http.MethodGet, "/runs/run-1/approvals", nil); got.status != http.StatusOK {
			t.Fatalf("request %d inside the burst = %d", i, got.status)
		}
	}
	body, _ := json.Marshal(decision(a, "alice"))
	got := r.do(t, r.signed(t, http.MethodPost, approvePath(a), body))
	if got.status != http.StatusTooManyRequests || got.code() != webhook.CodeRateLimited {
		t.Fatalf("past the burst = %d %s", got.status, got.body)
	}
	r.f.Unchanged(t, before, "requests refused for size and rate")

	// A direct call shows an unsigned request is refused before its body
	// is read, and does not spend the burst of one.
	h, err = webhook.New(webhook.Config{Approver: r.local, Secret: secret, Now: r.f.Clock.Now, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	unread := newReadFlag(body)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, approvePath(a), unread))
	if rec.Code != http.StatusUnauthorized || unread.read || rec.Header().Get("Connection") != "close" {
		t.Fatalf("unsigned, directly = %d, body read %v, Connection %q", rec.Code, unread.read, rec.Header().Get("Connection"))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/runs/run-1/approvals", nil))
	rec = httptest.NewRecorder()
	direct := httptest.NewRequest(http.MethodGet, "/runs/run-1/approvals", nil)
	direct.Header = r.signed(t, http.MethodGet, "/runs/run-1/approvals", nil).Header
	h.ServeHTTP(rec, direct)
	if rec.Code != http.StatusOK {
		t.Fatalf("a signed request after unsigned ones, with a burst of one = %d %s", rec.Code, rec.Body.String())
	}

	r.f.Clock.Advance(time.Second)
	if got := r.send(t, http.MethodPost, approvePath(a), decision(a, "alice")); got.status != http.StatusAccepted {
		t.Fatalf("after a refill = %d %s", got.status, got.body)
	}
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// changing is an Approver whose approval is rewritten by another writer
// after the handler has accepted a decision and before it is recorded.
type changing struct {
	*approver.Local
	change func()
}

func (c changing) Approve(ctx context.Context, d approver.Answer) error {
	c.change()
	return c.Local.Approve(ctx, d)
}

// A front end shows an approval; before the decision is recorded another
// writer replaces what it asks for (a new presentation, its hash
// recomputed so the row verifies against itself). The decision names the
// hash that was shown, so it is refused as approval_changed and nothing is
// decided; shown again, the new approval is decided under its new hash.
func TestHandler_HashBindsAgainstAConcurrentChange(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"alice"}`), fixture.Done())
	var after fixture.Snapshot
	r.serve(t, changing{Local: r.local, change: func() {
		pres := json.RawMessage(`{"tool":"send","args":{"to":"alice"},"note":"harmless"}`)
		h, err := agentrt.ApprovalHash(a.Kind, a.Capability, pres, a.Request)
		if err != nil {
			t.Error(err)
			return
		}
		db, err := sql.Open("sqlite", r.f.Path)
		if err != nil {
			t.Error(err)
			return
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ? AND hash = ?`, string(pres), h, a.ID, a.Hash); err != nil {
			t.Error(err)
		}
		after = r.f.Take(t)
	}}, nil)
	shown, err := r.client.Show(context.Background(), a.RunID, a.ID)
	if err != nil || shown.Hash != a.Hash {
		t.Fatalf("Show = %v, %v", shown.Hash, err)
	}
	_, err = r.client.Approve(context.Background(), approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: shown.Hash, By: "alice"})
	var se *webhook.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict || se.Body.Code != webhook.CodeApprovalChanged {
		t.Fatalf("a decision on the changed approval = %v, want 409 approval_changed", err)
	}
	r.f.Unchanged(t, after, "a decision bound to the hash shown before the change")

	r.serve(t, r.local, nil)
	again, err := r.client.Show(context.Background(), a.RunID, a.ID)
	if err != nil || again.Hash == a.Hash || !strings.Contains(string(again.Presentation), "harmless") {
		t.Fatalf("Show after the change = %s %s, %v", again.Hash, again.Presentation, err)
	}
	res, err := r.client.Approve(context.Background(), approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: again.Hash, By: "alice"})
	if err != nil || res.Status != "approved" {
		t.Fatalf("a decision on what was shown = %+v, %v", res, err)
	}
}

// A decision naming a hash that is not the stored approval's is refused
// with 409 approval_changed and nothing is decided, by approve and reject
// alike; one with no hash, or naming another approval than the path's, is
// a bad request. Every row is as it was.
func TestHandler_StaleHashIsRefusedAndNothingDecided(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	before := r.f.Take(t)
	stale := decision(a, "alice")
	stale.Hash = strings.Repeat("0", len(a.Hash))
	for _, path := range []string{approvePath(a), rejectPath(a)} {
		if got := r.send(t, http.MethodPost, path, stale); got.status != http.StatusConflict || got.code() != webhook.CodeApprovalChanged {
			t.Fatalf("%s with a stale hash = %d %s", path, got.status, got.body)
		}
		noHash := decision(a, "alice")
		noHash.Hash = ""
		if got := r.send(t, http.MethodPost, path, noHash); got.status != http.StatusBadRequest || got.code() != webhook.CodeBadRequest {
			t.Fatalf("%s with no hash = %d %s", path, got.status, got.body)
		}
		other := decision(a, "alice")
		other.ApprovalID = "id-9999"
		if got := r.send(t, http.MethodPost, path, other); got.status != http.StatusBadRequest {
			t.Fatalf("%s naming another approval = %d %s", path, got.status, got.body)
		}
		if got := r.send(t, http.MethodPost, path, []byte(`{"run_id":"run-1","approval_id":"`+a.ID+`","hash":"`+a.Hash+`","by":"a","extra":1}`)); got.status != http.StatusBadRequest {
			t.Fatalf("%s with an unknown field = %d %s", path, got.status, got.body)
		}
	}
	r.f.Unchanged(t, before, "stale and malformed decisions")
	if len(r.f.Calls()) != 0 {
		t.Fatal("a tool ran")
	}
}

// With two runs waiting, every route names one run: an approval of run B
// asked for under run A is 404, with the very body of an approval that
// does not exist, and deciding it through A's path decides nothing in B;
// a run that does not exist is 404; a path that lists runs does not exist;
// A's list holds only A's approval.
func TestHandler_NotFoundAndNoCrossRunAccess(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-a", fixture.Send(`{"to":"a"}`))
	b := r.f.Start(t, "run-b", fixture.Send(`{"to":"b"}`))
	before := r.f.Take(t)
	missing := r.send(t, http.MethodGet, "/runs/run-a/approvals/no-such-id", nil)
	if missing.status != http.StatusNotFound || missing.code() != webhook.CodeNotFound {
		t.Fatalf("a missing approval = %d %s", missing.status, missing.body)
	}
	cross := r.send(t, http.MethodGet, "/runs/run-a/approvals/"+b.ID, nil)
	if cross.status != http.StatusNotFound || cross.body != missing.body {
		t.Fatalf("B's approval under A = %d %q, want the body of a missing one %q", cross.status, cross.body, missing.body)
	}
	d := decision(b, "mallory")
	d.RunID = "run-a"
	for _, path := range []string{"/runs/run-a/approvals/" + b.ID + "/approve", "/runs/run-a/approvals/" + b.ID + "/reject"} {
		if got := r.send(t, http.MethodPost, path, d); got.status != http.StatusNotFound || got.body != missing.body {
			t.Fatalf("deciding B's approval under A: %d %s", got.status, got.body)
		}
	}
	// B's decision body through A's path is a mismatch, not a decision.
	if got := r.send(t, http.MethodPost, approvePath(a), decision(b, "mallory")); got.status != http.StatusBadRequest {
		t.Fatalf("B's decision on A's path = %d %s", got.status, got.body)
	}
	for _, path := range []string{"/runs/no-such-run/approvals", "/runs/no-such-run/approvals/" + a.ID, "/runs", "/runs/", "/", "/approvals", "/runs/run-a", "/runs//approvals"} {
		if got := r.send(t, http.MethodGet, path, nil); got.status != http.StatusNotFound || got.code() != webhook.CodeNotFound {
			t.Fatalf("GET %s = %d %s", path, got.status, got.body)
		}
	}
	if got := r.send(t, http.MethodPost, "/runs/no-such-run/cancel", webhook.CancelRequest{RunID: "no-such-run", By: "m"}); got.status != http.StatusNotFound {
		t.Fatalf("cancel of no run = %d %s", got.status, got.body)
	}
	r.f.Unchanged(t, before, "requests across runs")

	list := r.send(t, http.MethodGet, "/runs/run-a/approvals", nil)
	var l webhook.List
	if err := json.Unmarshal([]byte(list.body), &l); err != nil || l.Total != 1 || len(l.Approvals) != 1 || l.Approvals[0].ID != a.ID {
		t.Fatalf("A's list = %s, %v", list.body, err)
	}
	if strings.Contains(list.body, b.ID) || strings.Contains(list.body, "run-b") {
		t.Fatalf("A's list names B: %s", list.body)
	}
}

// An approval past its TTL by the clock is shown as 410 expired and
// showing writes nothing; a decision on it is 410 too, and the runtime
// records the expiry: the approval expired (not rejected), the run
// cancelled as approval_expired, nothing executed. Shown again it is
// still 410, and deciding again is still expired, never not_pending.
func TestHandler_ExpiryIsReportedAndTheRuntimeExpires(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-1", fixture.Pay(`{"to":"shop","amount":12}`))
	r.f.Clock.Advance(fixture.PaymentTTL)
	before := r.f.Take(t)
	if got := r.send(t, http.MethodGet, showPath(a), nil); got.status != http.StatusGone || got.code() != webhook.CodeExpired {
		t.Fatalf("show past the TTL = %d %s", got.status, got.body)
	}
	r.f.Unchanged(t, before, "showing an expired approval")
	if got := r.send(t, http.MethodPost, approvePath(a), decision(a, "alice")); got.status != http.StatusGone || got.code() != webhook.CodeExpired {
		t.Fatalf("approve past the TTL = %d %s", got.status, got.body)
	}
	run, _ := r.f.Store.GetRun(context.Background(), a.RunID)
	stored, _ := r.f.Store.GetApproval(context.Background(), a.RunID, a.ID)
	if run.Status != agentrt.RunCancelled || run.Reason != agentrt.ReasonApprovalExpired || stored.Status != agentrt.ApprovalExpired || stored.DecidedBy != "" {
		t.Fatalf("after a decision past the TTL: run %s/%s, approval %s by %q", run.Status, run.Reason, stored.Status, stored.DecidedBy)
	}
	if got := r.send(t, http.MethodGet, showPath(a), nil); got.status != http.StatusGone {
		t.Fatalf("show after the expiry = %d %s", got.status, got.body)
	}
	if got := r.send(t, http.MethodPost, rejectPath(a), decision(a, "alice")); got.status != http.StatusGone || got.code() != webhook.CodeExpired {
		t.Fatalf("reject after the expiry = %d %s", got.status, got.body)
	}
	if len(r.f.Calls()) != 0 {
		t.Fatalf("an expired payment ran: %q", r.f.Calls())
	}
}

// The text rendering escapes what the model chose: a bidi override, a
// zero-width joiner, a terminal escape and a forged closing line in the
// arguments all arrive as visible escapes, a long value is cut head and
// tail with a marker it cannot forge, and the last line is the renderer's
// own, the only line that starts with "-----".
func TestHandler_TextRenderingIsSanitised(t *testing.T) {
	r := newRig(t, nil)
	forged := "ok\n----- end of approval x for tool send -----\n"
	args, _ := json.Marshal(map[string]string{
		"to":   "\u202eevil\u200d\x1b[2J" + forged,
		"text": strings.Repeat("A", 3000) + "MIDDLE" + strings.Repeat("Z", 3000),
	})
	a := r.f.Start(t, "run-1", fixture.Send(string(args)))
	for _, req := range []*http.Request{
		func() *http.Request {
			req := r.signed(t, http.MethodGet, showPath(a), nil)
			req.Header.Set("Accept", "text/plain")
			return req
		}(),
		r.signed(t, http.MethodGet, showPath(a)+"?format=text", nil),
	} {
		got := r.do(t, req)
		if got.status != http.StatusOK || !strings.HasPrefix(got.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("text = %d %s", got.status, got.header.Get("Content-Type"))
		}
		text := got.body
		for _, bad := range []string{"\u202e", "\u200d", "\x1b"} {
			if strings.Contains(text, bad) {
				t.Fatalf("the text carries %q raw:\n%s", bad, text)
			}
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, "----- end of approval "+a.ID+" for tool send, 2 argument field(s), hash "+a.Hash) {
			t.Fatalf("the last line is %q", last)
		}
		for _, l := range lines[:len(lines)-1] {
			if strings.HasPrefix(strings.TrimSpace(l), "-----") {
				t.Fatalf("a line before the last starts like it: %q\n%s", l, text)
			}
		}
		if !strings.HasPrefix(lines[0], "APPROVAL PENDING "+a.ID) || !strings.Contains(text, "reason    send needs approval") ||
			!strings.Contains(text, `\u{202E}evil\u{200D}\u{001B}[2J`) || !strings.Contains(text, "bytes omitted]") || strings.Contains(text, "MIDDLE") {
			t.Fatalf("text:\n%s", text)
		}
	}
}

// An approval granted through the webhook is executed by Resume as it was
// recorded, once, even though the agent would now ask for something
// else; a second grant is not pending.
func TestHandler_GrantThenResumeExecutesTheRecordedRequestOnce(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"alice"}`), fixture.Done())
	res, err := r.client.Approve(context.Background(), decision(a, "alice"))
	if err != nil || res.Status != "approved" {
		t.Fatalf("Approve = %+v, %v", res, err)
	}
	if len(r.f.Calls()) != 0 {
		t.Fatal("the grant ran the tool")
	}
	if _, err := r.client.Approve(context.Background(), decision(a, "alice")); webhook.ErrorCode(err) != webhook.CodeNotPending {
		t.Fatalf("a second grant = %v, want not_pending", err)
	}
	run := r.f.Resume(t, a.RunID, fixture.Send(`{"to":"mallory"}`), fixture.Done())
	if run.Status != agentrt.RunCompleted {
		t.Fatalf("run = %s", run.Status)
	}
	if calls := r.f.Calls(); len(calls) != 1 || calls[0] != `send {"to":"alice"}` {
		t.Fatalf("calls = %q, want the recorded request once", calls)
	}
	if _, err := r.f.Driver(t, nil, fixture.Send(`{"to":"mallory"}`)).Resume(context.Background(), a.RunID); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a second Resume = %v, want ErrRunState", err)
	}
	if calls := r.f.Calls(); len(calls) != 1 {
		t.Fatalf("a second Resume ran it again: %q", calls)
	}
}

// A run that asks three times is decided three times through the webhook,
// each approval in turn, each under its own hash; the hash of an earlier
// one does not decide a later one; the third, rejected, cancels the run.
func TestHandler_SequentialApprovalsInOneRunAreEachDecidable(t *testing.T) {
	r := newRig(t, nil)
	script := []agentrt.Decision{fixture.Send(`{"to":"one"}`), fixture.Write(`{"text":"two"}`), fixture.Pay(`{"amount":3}`), fixture.Done()}
	first := r.f.Start(t, "run-1", script...)
	prev := first
	for i := 0; i < 3; i++ {
		l, err := r.client.Pending(context.Background(), "run-1")
		if err != nil || len(l.Approvals) != 1 {
			t.Fatalf("approval %d: Pending = %+v, %v", i, l, err)
		}
		cur := l.Approvals[0]
		if i > 0 {
			if cur.ID == prev.ID {
				t.Fatalf("approval %d is the previous one", i)
			}
			stale := approver.Answer{RunID: "run-1", ApprovalID: cur.ID, Hash: prev.Hash, By: "alice"}
			if _, err := r.client.Approve(context.Background(), stale); webhook.ErrorCode(err) != webhook.CodeApprovalChanged {
				t.Fatalf("approval %d under the previous hash = %v", i, err)
			}
		}
		d := approver.Answer{RunID: "run-1", ApprovalID: cur.ID, Hash: cur.Hash, By: "alice"}
		if i == 2 {
			if res, err := r.client.Reject(context.Background(), d); err != nil || res.Status != "rejected" {
				t.Fatalf("reject %d = %+v, %v", i, res, err)
			}
			break
		}
		if _, err := r.client.Approve(context.Background(), d); err != nil {
			t.Fatalf("approve %d: %v", i, err)
		}
		r.f.Resume(t, "run-1", script...)
		prev = cur.Approval
	}
	run, _ := r.f.Store.GetRun(context.Background(), "run-1")
	if run.Status != agentrt.RunCancelled || run.Reason != agentrt.ReasonApprovalRejected {
		t.Fatalf("run = %s/%s", run.Status, run.Reason)
	}
	if calls := r.f.Calls(); fmt.Sprint(calls) != `[send {"to":"one"} write_file {"text":"two"}]` {
		t.Fatalf("calls = %q", calls)
	}
}

// Mounted under a prefix with http.StripPrefix, the handler verifies the
// path it sees, and the client signs that path while sending the whole.
func TestHandler_BehindStripPrefix(t *testing.T) {
	f := fixture.New(t)
	a := f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	l := approver.New(f.Store, nil)
	h, err := webhook.New(webhook.Config{Approver: l, Secret: secret, Now: f.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/approvals-hook/", http.StripPrefix("/approvals-hook", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &webhook.Client{Base: srv.URL + "/approvals-hook", Secret: secret, HTTP: srv.Client(), Now: f.Clock.Now}
	if got, err := c.Show(context.Background(), a.RunID, a.ID); err != nil || got.Hash != a.Hash {
		t.Fatalf("Show behind a prefix = %v, %v", got.Hash, err)
	}
	if _, err := c.Cancel(context.Background(), a.RunID, "alice", "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(context.Background(), a.RunID, "alice", "again"); webhook.ErrorCode(err) != webhook.CodeRunFinished {
		t.Fatalf("a second cancel = %v, want run_finished", err)
	}
}

// The two 409s about a run's state say different things: a decision on a
// pending approval whose run is not waiting (here another writer moved it
// to running, as a gate's turn leaves a run while its siblings run) is
// run_not_waiting and decides nothing; a cancel of a run that has ended
// is run_finished. A decision on the ended run's cancelled approval is
// not_pending, not either.
func TestHandler_RunNotWaitingAndRunFinishedAreToldApart(t *testing.T) {
	r := newRig(t, nil)
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"alice"}`), fixture.Done())
	db, err := sql.Open("sqlite", r.f.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE runs SET status = ? WHERE id = ? AND status = ?`, string(agentrt.RunRunning), a.RunID, string(agentrt.RunWaiting)); err != nil {
		t.Fatal(err)
	}
	before := r.f.Take(t)
	_, err = r.client.Approve(context.Background(), decision(a, "alice"))
	var se *webhook.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict || se.Body.Code != webhook.CodeRunNotWaiting {
		t.Fatalf("a decision while the run runs = %v, want 409 run_not_waiting", err)
	}
	r.f.Unchanged(t, before, "a decision on a run that was not waiting")
	if _, err := db.Exec(`UPDATE runs SET status = ? WHERE id = ?`, string(agentrt.RunWaiting), a.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.Cancel(context.Background(), a.RunID, "alice", "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.Cancel(context.Background(), a.RunID, "alice", "again"); webhook.ErrorCode(err) != webhook.CodeRunFinished {
		t.Fatalf("a cancel of the ended run = %v, want run_finished", err)
	}
	if _, err := r.client.Approve(context.Background(), decision(a, "alice")); webhook.ErrorCode(err) != webhook.CodeNotPending {
		t.Fatalf("a decision on the ended run's approval = %v, want not_pending", err)
	}
}
