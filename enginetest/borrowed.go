package enginetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// The gate for loops agentrt does not own (an agent framework's): several
// calls of one run open at once, waiting on an approval, a caller's call
// id, a body supplied at the call, and a run ended without a step.

// bwBegin begins run-1 on g with the limits a framework adapter uses and
// opens no step: the case opens its steps itself, several at once.
func bwBegin(t testing.TB, g *agentrt.Gate) *agentrt.GateSession {
	t.Helper()
	s, err := g.Begin(context.Background(), "run-1", "goal", agentrt.FrameworkLimits())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bwClock is an engine clock moved by hand.
type bwClock struct{ ns atomic.Int64 }

func bwNewClock() *bwClock {
	c := &bwClock{}
	c.ns.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *bwClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *bwClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// bwSpec is a spec-only tool's spec.
func bwSpec(name string, se agentrt.SideEffect) agentrt.ToolSpec {
	return agentrt.ToolSpec{Name: name, Description: name + " for tests", InputSchema: json.RawMessage(lkSchema), SideEffect: se, Timeout: time.Minute}
}

// bwEvents returns the types of a run's events, in order.
func bwEvents(t testing.TB, st agentrt.StoreReader, runID string) []agentrt.EventType {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]agentrt.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// A turn with three calls of one run at once: a write the policy sends to
// an operator, and two reads it allows. The write's pending verdict holds
// only the write: the run stays RUNNING and both reads execute, their tools
// running side by side (each waits until the other has started), without
// waiting for the approval. When the reads are done nothing is in flight
// and the run waits (run.waiting); the record is one chain that verifies.
// Approved, Attach opens the write's step and it runs once.
func caseGate_ConcurrentStepsOfOneRunRunWhileASiblingWaits(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	var started sync.WaitGroup
	started.Add(2)
	read := lkNewTool("read", agentrt.ReadOnly, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		started.Done()
		started.Wait() // returns only once the sibling's tool runs too
		return agentrt.ToolResult{Content: json.RawMessage(`{"read":true}`)}, nil
	})
	send := lkNewTool("send", agentrt.RemoteMutation, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{read, send}}}, nil)
	s := bwBegin(t, g)
	calls := []agentrt.Decision{lkCall("send", `{"text":"w"}`), lkCall("read", `{"n":1}`), lkCall("read", `{"n":2}`)}
	for i := range calls {
		calls[i].CallID = []string{"call-w", "call-r1", "call-r2"}[i]
	}
	steps := make([]*agentrt.OpenStep, len(calls))
	for i := range steps {
		step, err := s.Step(ctx)
		if err != nil || step == nil {
			t.Fatalf("Step %d: %v", i, err)
		}
		steps[i] = step
	}
	wv := lkPropose(t, steps[0], calls[0], agentrt.VerdictPending)
	if wv.Approval == nil || wv.Run.Status != agentrt.RunRunning || s.Done() {
		t.Fatalf("the write's pending verdict: run %s, session done %v; want the run going on for its siblings", wv.Run.Status, s.Done())
	}
	if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunRunning {
		t.Fatalf("the run is %s while siblings are open", r.Status)
	}
	results := bwProposeAndExecute(t, steps[1:], calls[1:])
	for _, r := range results {
		if r.v.Outcome != agentrt.VerdictAllowed || r.obs.Kind != agentrt.ObsToolResult {
			t.Fatalf("a read: %s, %s", r.v.Outcome, r.obs.Kind)
		}
	}
	if n := len(read.args()); n != 2 {
		t.Fatalf("read ran %d times", n)
	}
	if n := len(send.args()); n != 0 {
		t.Fatalf("the write ran %d times before its approval", n)
	}
	run := kit.MustRun(t, st, "run-1")
	if run.Status != agentrt.RunWaiting || run.LeaseOwner != "" || !s.Done() {
		t.Fatalf("after the reads: run %s lease %q, session done %v; want waiting", run.Status, run.LeaseOwner, s.Done())
	}
	evs := bwEvents(t, st, "run-1")
	if evs[len(evs)-1] != agentrt.EventRunWaiting {
		t.Fatalf("the last event is %s, want run.waiting", evs[len(evs)-1])
	}
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}

	bwRunTheGrant(t, g, st, wv.Approval, send)
}

// bwResult is what one call of a turn got.
type bwResult struct {
	v   agentrt.Verdict
	obs agentrt.Observation
	err error
}

// bwProposeAndExecute proposes each decision on its step and executes
// each allowed one, every step on its own goroutine, and requires them all
// to return without an error.
func bwProposeAndExecute(t *testing.T, steps []*agentrt.OpenStep, calls []agentrt.Decision) []bwResult {
	t.Helper()
	ctx := context.Background()
	results := make([]bwResult, len(calls))
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := steps[i].Propose(ctx, calls[i])
			results[i].v, results[i].err = v, err
			if err == nil && v.Outcome == agentrt.VerdictAllowed {
				results[i].obs, results[i].err = steps[i].Execute(ctx)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	lkSignal(t, done, "the calls")
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	return results
}

// bwAttachGranted approves a (on run-1) by "op", attaches to the run
// through g, and returns the session and its open step for callID, which
// must be the session's current step and step stepID.
func bwAttachGranted(t *testing.T, g *agentrt.Gate, st agentrt.Store, a *agentrt.Approval, callID, stepID string) (*agentrt.GateSession, *agentrt.OpenStep) {
	t.Helper()
	ctx := context.Background()
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	s, v, err := g.Attach(ctx, "run-1")
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Attach after the approval: %s, %v; want the step open", v.Outcome, err)
	}
	open, ok := s.StepByCallID(callID)
	if !ok || open != s.Current() || open.ID() != stepID {
		t.Fatalf("StepByCallID(%s) = %v, %v; want the approved step %s", callID, open, ok, stepID)
	}
	return s, open
}

// bwRunTheGrant approves a, attaches to its run, finds the step by the
// call id "call-w", executes it, and completes the run: send must have run
// once with {"text":"w"}.
func bwRunTheGrant(t *testing.T, g *agentrt.Gate, st agentrt.Store, a *agentrt.Approval, send *lkTool) {
	t.Helper()
	ctx := context.Background()
	s2, open := bwAttachGranted(t, g, st, a, "call-w", a.StepID)
	if _, err := open.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if got := send.args(); !reflect.DeepEqual(got, []string{`{"text":"w"}`}) {
		t.Fatalf("send ran with %v", got)
	}
	if err := s2.Complete(ctx, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunCompleted || string(r.Result) != `{"ok":true}` {
		t.Fatalf("run %s result %s", r.Status, r.Result)
	}
}

// Await returns an approval once an operator decides it (on Postgres the
// decision's notification wakes it; on SQLite it reads again each poll), a
// cancelled context returns at once with its error, and an approval that
// outlived its expiry by the engine's clock is recorded expired and
// returned so, its run cancelled.
func caseGate_AwaitReturnsWhenDecidedExpiredOrCancelled(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	clock := bwNewClock()
	send := lkNewTool("send", agentrt.RemoteMutation, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{send}, Now: clock.Now},
		AwaitPoll: 20 * time.Millisecond}, nil)
	pending := func(id string) agentrt.Approval {
		t.Helper()
		limits := agentrt.FrameworkLimits()
		limits.ApprovalTTL = time.Hour
		_, step := lkBegin(t, g, id, limits)
		v := lkPropose(t, step, lkCall("send", `{"text":"x"}`), agentrt.VerdictPending)
		return *v.Approval
	}

	a := pending("decided")
	got := make(chan agentrt.Approval, 1)
	go func() {
		ap, err := g.Await(ctx, "decided", a.ID)
		if err != nil {
			t.Errorf("Await: %v", err)
		}
		got <- ap
	}()
	if err := (agentrt.Operator{Store: st, Now: clock.Now}).ApproveShown(ctx, "decided", a.ID, a.Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	if ap := lkAwait(t, got, "Await after the decision"); ap.Status != agentrt.ApprovalApproved || ap.DecidedBy != "op" {
		t.Fatalf("Await returned %s by %q", ap.Status, ap.DecidedBy)
	}

	b := pending("cancelled")
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := g.Await(cctx, "cancelled", b.ID)
		errc <- err
	}()
	cancel()
	if err := lkAwait(t, errc, "Await on a cancelled context"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await on a cancelled context: %v", err)
	}
	if ap, _ := st.GetApproval(ctx, "cancelled", b.ID); ap.Status != agentrt.ApprovalPending {
		t.Fatalf("a cancelled Await changed the approval to %s", ap.Status)
	}

	clock.Advance(2 * time.Hour)
	ap, err := g.Await(ctx, "cancelled", b.ID)
	if err != nil || ap.Status != agentrt.ApprovalExpired {
		t.Fatalf("Await past the expiry: %s, %v", ap.Status, err)
	}
	if r := kit.MustRun(t, st, "cancelled"); r.Status != agentrt.RunCancelled || r.Reason != agentrt.ReasonApprovalExpired {
		t.Fatalf("run %s %s after the expiry", r.Status, r.Reason)
	}
	if n := len(send.args()); n != 0 {
		t.Fatalf("send ran %d times", n)
	}
}

// Attach tells a caller three things apart: a run still waiting answers
// VerdictPending with its approval and no error (the session over); a run
// another process holds is ErrRunLeased; a run that ended is ErrRunEnded,
// which still matches ErrRunState and is not ErrRunLeased. BeginOrAttach
// begins a run that does not exist and attaches to one that does.
func caseGate_AttachTellsPendingLeasedAndEndedApart(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	send := lkNewTool("send", agentrt.RemoteMutation, nil)
	cfg := agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{send}}}
	g := lkGate(t, cfg, nil)

	s, v, err := g.BeginOrAttach(ctx, "waits", "goal", agentrt.FrameworkLimits())
	if err != nil || v.Outcome != "" || s.Done() {
		t.Fatalf("BeginOrAttach of a new run: %s, %v", v.Outcome, err)
	}
	step, _ := s.Step(ctx)
	pv := lkPropose(t, step, lkCall("send", `{"text":"x"}`), agentrt.VerdictPending)
	before := db.snapshot(t)
	s2, v, err := g.BeginOrAttach(ctx, "waits", "goal", agentrt.FrameworkLimits())
	if err != nil || v.Outcome != agentrt.VerdictPending || v.Approval == nil || v.Approval.ID != pv.Approval.ID || !s2.Done() {
		t.Fatalf("Attach of a waiting run: %s, %v; want pending with approval %s", v.Outcome, err, pv.Approval.ID)
	}
	if v.Run.Status != agentrt.RunWaiting || s2.Run().Status != agentrt.RunWaiting {
		t.Fatalf("the pending verdict shows the run %s", v.Run.Status)
	}
	db.requireUnchanged(t, before, "an Attach that found the run waiting")

	held, err := g.Begin(ctx, "held", "goal", agentrt.FrameworkLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	other := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: []agentrt.Tool{send}}}, nil)
	if _, _, err := other.Attach(ctx, "held"); !errors.Is(err, agentrt.ErrRunLeased) || errors.Is(err, agentrt.ErrRunEnded) {
		t.Fatalf("Attach of a leased run: %v, want ErrRunLeased", err)
	}

	ended, err := g.Begin(ctx, "ended", "goal", agentrt.FrameworkLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := ended.Complete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, v, err = other.Attach(ctx, "ended")
	if !errors.Is(err, agentrt.ErrRunEnded) || !errors.Is(err, agentrt.ErrRunState) || errors.Is(err, agentrt.ErrRunLeased) {
		t.Fatalf("Attach of an ended run: %v, want ErrRunEnded", err)
	}
	if v.Run.Status != agentrt.RunCompleted {
		t.Fatalf("the ended verdict shows the run %s", v.Run.Status)
	}
}

// A tool registered by spec only runs the body the caller hands
// ExecuteFunc: Execute is refused before anything is written, the body is
// called once with the recorded arguments (whatever the caller did to its
// verdict), its content is the recorded outcome, and a second ExecuteFunc
// is refused. A tool with a body of its own refuses ExecuteFunc.
func caseGate_ExecuteFuncRunsTheCallersBodyOnce(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	note := lkNewTool("note", agentrt.LocalMutation, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st,
		Tools: []agentrt.Tool{agentrt.SpecOnly(bwSpec("write", agentrt.LocalMutation)), note}}}, nil)
	s, step := lkBegin(t, g, "run-1", agentrt.FrameworkLimits())
	v := lkPropose(t, step, lkCall("write", `{"text":"a"}`), agentrt.VerdictAllowed)
	copy(v.Request.Args, `{"text":"b"}`)
	before := db.snapshot(t)
	if _, err := step.Execute(ctx); !errors.Is(err, agentrt.ErrNoToolBody) {
		t.Fatalf("Execute of a spec-only tool: %v, want ErrNoToolBody", err)
	}
	db.requireUnchanged(t, before, "a refused Execute")
	var got []string
	body := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		got = append(got, string(args))
		return json.RawMessage(`{"written":1}`), nil
	}
	obs, err := step.ExecuteFunc(ctx, body)
	if err != nil || obs.Kind != agentrt.ObsToolResult || string(obs.Content) != `{"written":1}` {
		t.Fatalf("ExecuteFunc: %+v, %v", obs, err)
	}
	if !reflect.DeepEqual(got, []string{`{"text":"a"}`}) {
		t.Fatalf("the body was called with %v, want the recorded arguments once", got)
	}
	if _, err := step.ExecuteFunc(ctx, body); !errors.Is(err, agentrt.ErrRunState) || len(got) != 1 {
		t.Fatalf("a second ExecuteFunc: %v, body called %d times", err, len(got))
	}
	rec := kit.MustSteps(t, st, "run-1")[0]
	if rec.Status != agentrt.StepDone || rec.Observation == nil || string(rec.Observation.Content) != `{"written":1}` {
		t.Fatalf("recorded step %s %+v", rec.Status, rec.Observation)
	}

	next, _ := s.Step(ctx)
	lkPropose(t, next, lkCall("note", `{"text":"n"}`), agentrt.VerdictAllowed)
	if _, err := next.ExecuteFunc(ctx, body); !errors.Is(err, agentrt.ErrNoToolBody) || len(note.args()) != 0 {
		t.Fatalf("ExecuteFunc of a tool with a body: %v", err)
	}
	if _, err := next.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, errors.New("the framework gave up")); err != nil {
		t.Fatal(err)
	}
	if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunFailed || r.Reason != agentrt.ReasonAgentError || r.StepCount != 2 {
		t.Fatalf("Fail without a step: run %s %s, %d steps", r.Status, r.Reason, r.StepCount)
	}
}

// A framework session restarted under a new run id proposes a request it
// already proposed: its request key (the SHA-256 of the tool's name, a NUL
// and the canonical arguments, as the proxy keys calls) finds the earlier
// step in the other run, from another process, with its approval pending,
// then granted, then with the result recorded, so the caller collects that
// answer instead of asking again. Other arguments find nothing.
func caseGate_RequestKeyFindsAnEarlierAnswerInAnotherRun(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	send := lkNewTool("send", agentrt.RemoteMutation, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: json.RawMessage(`{"sent":1}`)}, nil
	})
	g1 := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{send}}}, nil)
	_, step := lkBegin(t, g1, "session-1", agentrt.FrameworkLimits())
	v := lkPropose(t, step, lkCall("send", `{ "text" : "x" }`), agentrt.VerdictPending)

	key, err := agentrt.RequestKey("send", json.RawMessage(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("send\x00{\"text\":\"x\"}"))
	if key != hex.EncodeToString(sum[:]) {
		t.Fatalf("RequestKey = %s, want the SHA-256 of the name, a NUL and the canonical arguments", key)
	}
	g2 := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: []agentrt.Tool{send}}}, nil)
	lookup := func(what string) agentrt.RequestRecord {
		t.Helper()
		recs, err := g2.Lookup(ctx, key, 0)
		if err != nil || len(recs) != 1 || recs[0].Step.ID != step.ID() || recs[0].Step.RunID != "session-1" {
			t.Fatalf("%s: Lookup = %+v, %v; want the step of session-1", what, recs, err)
		}
		return recs[0]
	}
	if r := lookup("pending"); r.Approval == nil || r.Approval.ID != v.Approval.ID || r.Approval.Status != agentrt.ApprovalPending {
		t.Fatalf("pending: the record's approval %+v", r.Approval)
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "session-1", v.Approval.ID, v.Approval.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	if r := lookup("granted"); r.Approval == nil || r.Approval.Status != agentrt.ApprovalApproved {
		t.Fatalf("granted: the record's approval %+v", r.Approval)
	}
	s, av, err := g2.Attach(ctx, "session-1")
	if err != nil || av.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Attach: %s, %v", av.Outcome, err)
	}
	if _, err := s.Current().Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if r := lookup("executed"); r.Step.Observation == nil || string(r.Step.Observation.Content) != `{"sent":1}` {
		t.Fatalf("executed: the record's observation %+v", r.Step.Observation)
	}
	otherKey, _ := agentrt.RequestKey("send", json.RawMessage(`{"text":"y"}`))
	if recs, err := g2.Lookup(ctx, otherKey, 0); err != nil || len(recs) != 0 {
		t.Fatalf("another request's key found %d records, %v", len(recs), err)
	}
	if _, err := g2.Lookup(ctx, "not-a-key", 0); err == nil {
		t.Fatal("Lookup accepted a malformed key")
	}
	if n := len(send.args()); n != 1 {
		t.Fatalf("send ran %d times", n)
	}
}

// A Driver (and so a Worker) cannot resume a granted call to a tool
// registered by spec only: Resume refuses it with ErrNoToolBody and changes
// nothing, and the caller holding the body attaches and runs it.
func caseGate_SpecOnlyGrantIsLeftForItsCaller(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	spec := agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{spec}}}, nil)
	_, step := lkBegin(t, g, "run-1", agentrt.FrameworkLimits())
	v := lkPropose(t, step, lkCall("send", `{"text":"x"}`), agentrt.VerdictPending)
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", v.Approval.ID, v.Approval.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	d := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: []agentrt.Tool{spec}},
		Agent: agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			t.Error("the Driver's agent was asked")
			return lkComplete(), nil
		})}, nil)
	before := db.snapshot(t)
	if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrNoToolBody) {
		t.Fatalf("Driver.Resume of a spec-only grant: %v, want ErrNoToolBody", err)
	}
	db.requireUnchanged(t, before, "a refused Resume of a spec-only grant")
	s, av, err := g.Attach(ctx, "run-1")
	if err != nil || av.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Attach: %s, %v", av.Outcome, err)
	}
	calls := 0
	if _, err := s.Current().ExecuteFunc(ctx, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		calls++
		return nil, nil
	}); err != nil || calls != 1 {
		t.Fatalf("ExecuteFunc after the refused Resume: %v, %d calls", err, calls)
	}
}

// Two calls of one turn both need approval. The first pauses while its
// sibling is open; the sibling's pause then waits the run. Both approved,
// each Attach opens one granted step (the run waits again in between, the
// other grant still awaiting), and each runs once.
func caseGate_TwoWaitingCallsAreAttachedOneAtATime(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	send := lkNewTool("send", agentrt.RemoteMutation, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{send}}}, nil)
	s := bwBegin(t, g)
	a, _ := s.Step(ctx)
	b, _ := s.Step(ctx)
	da, db := lkCall("send", `{"text":"a"}`), lkCall("send", `{"text":"b"}`)
	da.CallID, db.CallID = "call-a", "call-b"
	va := lkPropose(t, a, da, agentrt.VerdictPending)
	if va.Run.Status != agentrt.RunRunning || s.Done() {
		t.Fatalf("the first pause: run %s, done %v; want the run going on for its sibling", va.Run.Status, s.Done())
	}
	vb := lkPropose(t, b, db, agentrt.VerdictPending)
	if vb.Run.Status != agentrt.RunWaiting || !s.Done() {
		t.Fatalf("the second pause: run %s, done %v; want the run waiting", vb.Run.Status, s.Done())
	}
	op := agentrt.Operator{Store: st}
	for _, v := range []agentrt.Verdict{va, vb} {
		if err := op.ApproveShown(ctx, "run-1", v.Approval.ID, v.Approval.Hash, "op", ""); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []string{a.ID(), b.ID()} {
		s2, v, err := g.Attach(ctx, "run-1")
		if err != nil || v.Outcome != agentrt.VerdictAllowed || s2.Current().ID() != want {
			t.Fatalf("Attach %d: %s, %v; want step %s open", i, v.Outcome, err, want)
		}
		if _, err := s2.Current().Execute(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 0 && (!s2.Done() || kit.MustRun(t, st, "run-1").Status != agentrt.RunWaiting) {
			t.Fatal("after the first grant ran, the run does not wait on the second")
		}
		if i == 1 {
			if err := s2.Complete(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := send.args(); !reflect.DeepEqual(got, []string{`{"text":"a"}`, `{"text":"b"}`}) {
		t.Fatalf("send ran with %v, want each grant once", got)
	}
}
