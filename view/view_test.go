package view_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/view"
)

// fixture is a real SQLite store with a driver on a fake clock and
// counting ids.
type fixture struct {
	st  *sqlite.Store
	now time.Time
	ids int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{st: st, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

func (f *fixture) clock() time.Time {
	f.now = f.now.Add(time.Second)
	return f.now
}

func (f *fixture) newID() string {
	f.ids++
	return fmt.Sprintf("id%04d", f.ids)
}

var tools = []agentrt.Tool{
	agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "read", SideEffect: agentrt.ReadOnly, Timeout: time.Second,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"text":"hello"}`), Summary: "read 5 bytes"}, nil
		}},
	agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "write", SideEffect: agentrt.LocalMutation, Timeout: time.Second,
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Summary: "wrote"}, nil
		}},
}

// run starts a run with a scripted agent under a policy that allows reads
// and asks approval for writes.
func (f *fixture) run(t *testing.T, goal string, ds ...agentrt.Decision) agentrt.Run {
	t.Helper()
	return enginekit.StartScripted(t, agentrt.EngineConfig{
		Store:  f.st,
		Tools:  tools,
		Policy: agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.LocalMutation: agentrt.RequireApproval},
		Now:    f.clock,
		NewID:  f.newID,
	}, goal, ds...)
}

// addPending inserts further pending approvals on a waiting run's step, as
// a crafted or future database could hold.
func (f *fixture) addPending(t *testing.T, runID, stepID string, n int) []string {
	t.Helper()
	var ids []string
	_, err := f.st.Update(context.Background(), func(tx agentrt.Tx) error {
		for i := 0; i < n; i++ {
			id := f.newID()
			ids = append(ids, id)
			if err := tx.ApprovalInsert(agentrt.Approval{ID: id, RunID: runID, StepID: stepID, Kind: "extra",
				Capability: json.RawMessage(`{}`), Presentation: json.RawMessage(`{}`),
				Request: agentrt.ToolRequest{RunID: runID, StepID: stepID, Args: json.RawMessage(`{}`)},
				Hash:    "h" + id, Status: agentrt.ApprovalPending, CreatedAt: f.clock()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func waiting(t *testing.T, f *fixture, goal string) agentrt.Run {
	t.Helper()
	r := f.run(t, goal, scripted.ToolCall("read", `{}`, "look"), scripted.ToolCall("write", `{"path":"a"}`, "write"))
	if r.Status != agentrt.RunWaiting {
		t.Fatalf("run is %s, want waiting", r.Status)
	}
	return r
}

// cancelledWhileWaiting is a run an operator cancelled while it waited on
// its write's approval. It returns the run as it was while waiting.
func cancelledWhileWaiting(t *testing.T, f *fixture, goal string) agentrt.Run {
	t.Helper()
	r := waiting(t, f, goal)
	if _, err := agentrt.Cancel(context.Background(), f.st, nil, r.ID, "op", ""); err != nil {
		t.Fatal(err)
	}
	return r
}

// A waiting run with one pending approval names it; a completed run and a
// waiting run with several name none.
func TestRunsPage_SummariesCarryTheWaitingApproval(t *testing.T) {
	f := newFixture(t)
	done := f.run(t, "finish", scripted.ToolCall("read", `{}`, "look"), scripted.Complete(`{"ok":true}`))
	one := waiting(t, f, "one pending")
	several := waiting(t, f, "several pending")
	steps, err := f.st.ListSteps(context.Background(), several.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.addPending(t, several.ID, steps[len(steps)-1].ID, 1)

	got, total, err := view.RunsPage(context.Background(), f.st, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(got) != 3 {
		t.Fatalf("total %d, len %d; want 3, 3", total, len(got))
	}
	byID := map[string]view.RunSummary{}
	for _, s := range got {
		byID[s.ID] = s
	}
	if got[0].ID != several.ID || got[2].ID != done.ID {
		t.Errorf("order %s %s %s, want newest first", got[0].ID, got[1].ID, got[2].ID)
	}
	if s := byID[one.ID]; s.PendingApprovalID == "" || s.Status != agentrt.RunWaiting || s.Steps != 2 {
		t.Errorf("one pending: %+v", s)
	}
	if s := byID[several.ID]; s.PendingApprovalID != "" {
		t.Errorf("several pending named %q, want none", s.PendingApprovalID)
	}
	if s := byID[done.ID]; s.PendingApprovalID != "" || s.Status != agentrt.RunCompleted || s.Reason != agentrt.ReasonGoalCompleted {
		t.Errorf("completed: %+v", s)
	}
	b, _ := json.Marshal(byID[one.ID])
	if strings.Contains(string(b), "finished_at") {
		t.Errorf("a run that has not finished encodes a finished_at: %s", b)
	}
}

// A terminal run has no pending approval, even if a row says one is pending.
func TestSummary_TerminalRunHasNoPendingApproval(t *testing.T) {
	f := newFixture(t)
	r := cancelledWhileWaiting(t, f, "cancel me")
	s, err := view.Summary(context.Background(), f.st, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != agentrt.RunCancelled || s.PendingApprovalID != "" || s.FinishedAt.IsZero() {
		t.Errorf("summary %+v", s)
	}
	if _, err := view.Summary(context.Background(), f.st, "nope"); !errors.Is(err, agentrt.ErrNotFound) {
		t.Errorf("missing run: %v, want ErrNotFound", err)
	}
}

// Each step summary carries its decision, policy outcome, observation and
// the observation's summary.
func TestSummarizeStep_DecisionPolicyAndObservation(t *testing.T) {
	f := newFixture(t)
	r := waiting(t, f, "steps")
	p, err := view.DetailPage(context.Background(), f.st, r.ID, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 2 || p.StepsTotal != 2 {
		t.Fatalf("steps %d of %d", len(p.Steps), p.StepsTotal)
	}
	s0, s1 := p.Steps[0], p.Steps[1]
	if s0.Tool != "read" || s0.Decision != agentrt.KindToolCall || s0.Policy != agentrt.Allow ||
		s0.Observation != agentrt.ObsToolResult || s0.Summary != "read 5 bytes" || s0.Status != agentrt.StepDone {
		t.Errorf("step 0: %+v", s0)
	}
	if s1.Tool != "write" || s1.Policy != agentrt.RequireApproval || s1.Observation != "" || s1.Status != agentrt.StepAwaitingApproval {
		t.Errorf("step 1: %+v", s1)
	}
	if p.Waiting == nil || p.PendingTotal != 1 || p.Run.PendingApprovalID != p.Waiting.ID {
		t.Errorf("waiting %+v, pending total %d", p.Waiting, p.PendingTotal)
	}
}

// The waiting approval is on every page of steps, and steps page by offset.
func TestDetailPage_WaitingApprovalOnEveryPage(t *testing.T) {
	f := newFixture(t)
	r := waiting(t, f, "pages")
	p, err := view.DetailPage(context.Background(), f.st, r.ID, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || p.Steps[0].Index != 1 || p.StepsTotal != 2 {
		t.Errorf("page: %d steps, first index %d, total %d", len(p.Steps), p.Steps[0].Index, p.StepsTotal)
	}
	if p.Waiting == nil || len(p.Pending) != 1 {
		t.Errorf("the waiting approval is missing from the second page")
	}
	if len(p.Approvals) != 0 || p.ApprovalsTotal != 1 {
		t.Errorf("approvals page from offset 1: %d of %d, want 0 of 1", len(p.Approvals), p.ApprovalsTotal)
	}
}

// The rule for the approval an operator means.
func TestPendingApproval_SelectionRule(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := waiting(t, f, "select")
	only, err := view.PendingApproval(ctx, f.st, r.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if only.Status != agentrt.ApprovalPending || only.Request.Spec.Name != "write" {
		t.Errorf("only pending: %+v", only)
	}
	named, err := view.PendingApproval(ctx, f.st, r.ID, only.ID)
	if err != nil || named.Hash != only.Hash {
		t.Errorf("named: %v, hash %q want %q", err, named.Hash, only.Hash)
	}
	if _, err := view.PendingApproval(ctx, f.st, r.ID, "nope"); !errors.Is(err, agentrt.ErrNotFound) {
		t.Errorf("unknown approval: %v, want ErrNotFound", err)
	}
	if _, err := view.PendingApproval(ctx, f.st, "nope", ""); !errors.Is(err, agentrt.ErrNotFound) {
		t.Errorf("unknown run: %v, want ErrNotFound", err)
	}

	// Several pending: ambiguity names at most MaxCandidates and the rest
	// as a count; a named one is still chosen.
	extra := f.addPending(t, r.ID, only.StepID, 24)
	_, err = view.PendingApproval(ctx, f.st, r.ID, "")
	var amb *view.AmbiguousApprovalError
	if !errors.As(err, &amb) || !errors.Is(err, view.ErrAmbiguousApproval) {
		t.Fatalf("several pending: %v, want an AmbiguousApprovalError", err)
	}
	if amb.Total != 25 || len(amb.Candidates) != view.MaxCandidates || amb.Candidates[0] != only.ID {
		t.Errorf("ambiguity: total %d, %d candidates, first %s", amb.Total, len(amb.Candidates), amb.Candidates[0])
	}
	if !strings.HasSuffix(err.Error(), "and 5 more") {
		t.Errorf("error %q does not say how many more", err)
	}
	if a, err := view.PendingApproval(ctx, f.st, r.ID, extra[23]); err != nil || a.ID != extra[23] {
		t.Errorf("named among several: %v", err)
	}

	// A decided approval named is not pending.
	if err := agentrt.ApproveShown(ctx, f.st, nil, r.ID, only.ID, only.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := view.PendingApproval(ctx, f.st, r.ID, only.ID); !errors.Is(err, agentrt.ErrNotPending) {
		t.Errorf("decided approval: %v, want ErrNotPending", err)
	}

	// No pending approval at all.
	g := newFixture(t)
	w := waiting(t, g, "approve then look")
	a, _ := view.PendingApproval(ctx, g.st, w.ID, "")
	if err := agentrt.ApproveShown(ctx, g.st, nil, w.ID, a.ID, a.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := view.PendingApproval(ctx, g.st, w.ID, ""); !errors.Is(err, view.ErrNoPendingApproval) {
		t.Errorf("none pending: %v, want ErrNoPendingApproval", err)
	}

	// A run that is not waiting.
	if _, err := agentrt.Cancel(ctx, g.st, nil, w.ID, "op", ""); err != nil {
		t.Fatal(err)
	}
	_, err = view.PendingApproval(ctx, g.st, w.ID, "")
	var nw *view.RunNotWaitingError
	if !errors.As(err, &nw) || !errors.Is(err, view.ErrRunNotWaiting) || nw.Status != agentrt.RunCancelled {
		t.Errorf("cancelled run: %v, want RunNotWaitingError", err)
	}
}

// A string over the cap keeps a head and a tail cut on rune boundaries and
// says how much was left out; one at the cap is untouched.
func TestBoundString_HeadAndTailOnRuneBoundaries(t *testing.T) {
	at := strings.Repeat("x", view.MaxFieldBytes)
	if view.BoundString(at) != at {
		t.Error("a string at the cap was changed")
	}
	s := strings.Repeat("é", 5000) // 2 bytes each
	got := view.BoundString(s)
	if !utf8.ValidString(got) {
		t.Fatalf("bounded string is not valid UTF-8")
	}
	if len(got) > view.MaxFieldBytes {
		t.Errorf("bounded to %d bytes, over the cap", len(got))
	}
	head, tail, omitted, cut := view.Cut(s)
	if !cut || len(head)+len(tail)+omitted != len(s) || !strings.Contains(got, fmt.Sprintf("…[%d bytes omitted]…", omitted)) {
		t.Errorf("cut %v: head %d tail %d omitted %d of %d", cut, len(head), len(tail), omitted, len(s))
	}
	if view.BoundString(got) != got {
		t.Error("bounding a bounded string changed it")
	}
}

// BoundApproval bounds every long string in the approval and never the hash.
func TestBoundApproval_NeverChangesTheHash(t *testing.T) {
	big := strings.Repeat("A", 1<<20)
	args, _ := json.Marshal(map[string]any{"content": big, "path": "a.txt", "n": json.Number("1e400")})
	a := agentrt.Approval{ID: "a1", Kind: "write", Capability: json.RawMessage(`{"path":"a.txt"}`),
		Presentation: args, Request: agentrt.ToolRequest{Args: args, Spec: agentrt.ToolSpec{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)}}, Hash: strings.Repeat("f", 64), Note: big}
	want, err := agentrt.ApprovalHash(a.Kind, a.Capability, a.Presentation, a.Request)
	if err != nil {
		t.Fatal(err)
	}
	a.Hash = want
	b := view.BoundApproval(a)
	if b.Hash != want {
		t.Errorf("hash changed")
	}
	if len(b.Request.Args) > 2*view.MaxFieldBytes || len(b.Presentation) > 2*view.MaxFieldBytes || len(b.Note) > view.MaxFieldBytes {
		t.Errorf("not bounded: args %d, presentation %d, note %d bytes", len(b.Request.Args), len(b.Presentation), len(b.Note))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Request.Args, &m); err != nil || string(m["path"]) != `"a.txt"` {
		t.Errorf("bounded args %s: %v", b.Request.Args, err)
	}
	if !strings.Contains(string(b.Request.Args), `"n":1e400`) {
		t.Errorf("a number was rewritten: %s", b.Request.Args)
	}
	if string(b.Capability) != `{"path":"a.txt"}` {
		t.Errorf("a small value was re-encoded: %s", b.Capability)
	}
	if len(a.Request.Args) != len(args) {
		t.Error("the original was changed")
	}
}

// Bytes that are not JSON come back as a bounded JSON string.
func TestBoundRaw_InvalidJSONBecomesABoundedString(t *testing.T) {
	raw := json.RawMessage(strings.Repeat("{", 3000))
	got := view.BoundRaw(raw)
	var s string
	if err := json.Unmarshal(got, &s); err != nil || len(s) > view.MaxFieldBytes {
		t.Errorf("got %d bytes, %v", len(got), err)
	}
	if got := view.BoundRaw(json.RawMessage(`{"a":1} {"b":2}` + strings.Repeat(" ", 3000))); !json.Valid(got) || got[0] != '"' {
		t.Errorf("trailing value: %s", got)
	}
}

// A run that ended with an approval still marked pending has nothing
// waiting: the approval is listed, not offered.
func TestDetailPage_EndedRunOffersNoPendingApproval(t *testing.T) {
	f := newFixture(t)
	r := cancelledWhileWaiting(t, f, "cancelled while waiting")
	p, err := view.DetailPage(context.Background(), f.st, r.ID, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pending) != 0 || p.PendingTotal != 0 || p.Waiting != nil {
		t.Errorf("pending %d of %d, waiting %v", len(p.Pending), p.PendingTotal, p.Waiting)
	}
	if len(p.Approvals) != 1 || p.ApprovalsTotal != 1 {
		t.Errorf("approvals %d of %d, want the one left pending listed", len(p.Approvals), p.ApprovalsTotal)
	}
}

// Bounded bounds every approval of a page and leaves the page's own
// approvals as read.
func TestDetailPage_BoundedBoundsEveryApproval(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("x", 10000)
	r := f.run(t, "big write", scripted.ToolCall("write", `{"content":"`+big+`"}`, "write"))
	p, err := view.DetailPage(context.Background(), f.st, r.ID, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Bounded()
	if len(p.Waiting.Request.Args) < 10000 || len(b.Waiting.Request.Args) > view.MaxFieldBytes+100 ||
		len(b.Pending[0].Request.Args) > view.MaxFieldBytes+100 || len(b.Approvals[0].Presentation) > view.MaxFieldBytes+200 {
		t.Errorf("args %d -> waiting %d, pending %d, presentation %d", len(p.Waiting.Request.Args), len(b.Waiting.Request.Args),
			len(b.Pending[0].Request.Args), len(b.Approvals[0].Presentation))
	}
	if b.Waiting.Hash != p.Waiting.Hash {
		t.Error("the hash changed")
	}
}

// ValueSize counts a string's decoded bytes and any other value's compact
// JSON text, the one size rule the CLI and the console show.
func TestValueSize_StringsByDecodedBytesOthersByCompactJSON(t *testing.T) {
	for raw, want := range map[string]int{
		`"write"`:          5,
		`"a\u202eb"`:       5, // 1 + 3 UTF-8 bytes + 1
		`"say \"hi\""`:     8,
		`286`:              3,
		`{"a": 1,  "b":2}`: 13,
		`[ 1, 2 ]`:         5,
		`not json`:         8,
	} {
		if got := view.ValueSize(json.RawMessage(raw)); got != want {
			t.Errorf("ValueSize(%s) = %d, want %d", raw, got, want)
		}
	}
}
