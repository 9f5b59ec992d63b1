package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// lkGate builds a gate whose leases are judged by wall (nil: the real
// clock).
func lkGate(t testing.TB, cfg agentrt.GateConfig, wall *lkWall) *agentrt.Gate {
	t.Helper()
	withDefaultPolicy(&cfg.EngineConfig)
	g, err := agentrt.NewGate(cfg)
	return onWall(t, g, err, wall)
}

// lkBegin begins run id on g and opens its first step.
func lkBegin(t testing.TB, g *agentrt.Gate, id string, limits agentrt.Limits) (*agentrt.GateSession, *agentrt.OpenStep) {
	t.Helper()
	return kit.BeginStep(t, g, id, "goal", limits)
}

// lkPropose proposes d and requires the outcome.
func lkPropose(t testing.TB, step *agentrt.OpenStep, d agentrt.Decision, want agentrt.VerdictOutcome) agentrt.Verdict {
	t.Helper()
	v, err := step.Propose(context.Background(), d)
	if err != nil || v.Outcome != want {
		t.Fatalf("Propose %s: %s, %v; want %s", d.Kind, v.Outcome, err, want)
	}
	return v
}

// lkFinish completes the run through s.
func lkFinish(t testing.TB, s *agentrt.GateSession) {
	t.Helper()
	step, err := s.Step(context.Background())
	if err != nil || step == nil {
		t.Fatalf("Step: %v, %v", step, err)
	}
	lkPropose(t, step, lkComplete(), agentrt.VerdictEnded)
	if !s.Done() || s.Run().Status != agentrt.RunCompleted {
		t.Fatalf("after complete: done %v, run %s", s.Done(), s.Run().Status)
	}
}

// A caller proposes a call that needs approval and is shown the pending
// approval; approved, Attach hands it the approved step with a copy of the
// request. Whatever the caller does to the verdicts it was shown, Execute
// runs exactly the recorded request. The same holds for a request the
// policy allowed outright.
func caseGate_ApprovedStepExecutesTheRecordedRequest(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	deploy := lkNewTool("deploy", agentrt.RemoteMutation, nil)
	note := lkNewTool("note", agentrt.LocalMutation, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{deploy, note}}}, nil)

	s, step := lkBegin(t, g, "run-1", agentrt.DefaultLimits())
	v := lkPropose(t, step, lkCall("deploy", `{"text":"v1"}`), agentrt.VerdictPending)
	if v.Approval == nil || v.Run.Status != agentrt.RunWaiting || !s.Done() {
		t.Fatalf("pending verdict: approval %v run %s done %v", v.Approval, v.Run.Status, s.Done())
	}
	if _, err := s.Step(ctx); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("Step after the pause: %v, want ErrRunState", err)
	}
	// The caller scribbles over what it was shown.
	copy(v.Approval.Request.Args, `{"text":"v9"}`)
	v.Approval.Request.Spec.Name = "note"
	stored := kit.PendingApproval(t, st, "run-1")
	if string(stored.Request.Args) != `{"text":"v1"}` || stored.Request.Spec.Name != "deploy" {
		t.Fatalf("the stored approval changed with the verdict: %s %s", stored.Request.Spec.Name, stored.Request.Args)
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", stored.ID, stored.Hash, "op", "ship it"); err != nil {
		t.Fatal(err)
	}

	s2, v2, err := g.Attach(ctx, "run-1")
	if err != nil || v2.Outcome != agentrt.VerdictAllowed || v2.Request == nil {
		t.Fatalf("Attach: %s, %v", v2.Outcome, err)
	}
	if string(v2.Request.Args) != `{"text":"v1"}` || v2.Request.Spec.Name != "deploy" {
		t.Fatalf("Attach's request %s %s", v2.Request.Spec.Name, v2.Request.Args)
	}
	open := s2.Current()
	if open == nil || open.Index() != 0 || open.ID() != stored.StepID || open.Model() != nil {
		t.Fatalf("approved step: %+v", open)
	}
	if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunWaiting {
		t.Fatalf("the run is %s before Execute; it waits until the tool starts", r.Status)
	}
	copy(v2.Request.Args, `{"text":"v9"}`)
	v2.Request.Spec.Name = "note"
	v2.Request.StepID = "elsewhere"
	obs, err := open.Execute(ctx)
	if err != nil || obs.Kind != agentrt.ObsToolResult {
		t.Fatalf("Execute: %+v, %v", obs, err)
	}
	if got := deploy.args(); !reflect.DeepEqual(got, []string{`{"text":"v1"}`}) {
		t.Fatalf("deploy ran with %v, want the recorded request once", got)
	}
	if n := len(note.args()); n != 0 {
		t.Fatalf("note ran %d times", n)
	}
	if _, err := open.Execute(ctx); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("second Execute: %v, want ErrRunState", err)
	}

	// An allowed request: the verdict is a copy too.
	step, err = s2.Step(ctx)
	if err != nil || step == nil || step.Index() != 1 {
		t.Fatalf("Step: %v, %v", step, err)
	}
	v = lkPropose(t, step, lkCall("note", `{"text":"a"}`), agentrt.VerdictAllowed)
	copy(v.Request.Args, `{"text":"b"}`)
	v.Request.Spec.Name = "deploy"
	if _, err := step.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if got := note.args(); !reflect.DeepEqual(got, []string{`{"text":"a"}`}) {
		t.Fatalf("note ran with %v", got)
	}
	if n := len(deploy.args()); n != 1 {
		t.Fatalf("deploy ran %d times", n)
	}
	lkFinish(t, s2)
	s2.Close()
}

// A caller may hold an approved step as long as it likes, so GrantTTL is
// judged again at Execute on a fresh clock reading. Within the TTL the
// grant runs; past it, the grant expires, the run is cancelled as
// approval_expired, nothing executes, and the session is over.
func caseGate_GrantTTLHoldsUntilExecute(t *testing.T, bk *Backend) {
	ctx := context.Background()
	limits := agentrt.DefaultLimits()
	limits.GrantTTL = time.Minute
	approved := func(t *testing.T, id string) (*kit.FakeClock, *agentrt.Gate, *lkTool, agentrt.StoreReader) {
		st, _ := lkOpen(t, bk)
		clock := kit.NewClock()
		deploy := lkNewTool("deploy", agentrt.RemoteMutation, nil)
		g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{deploy}, Now: clock.Now}}, nil)
		_, step := lkBegin(t, g, id, limits)
		lkPropose(t, step, lkCall("deploy", `{"text":"v1"}`), agentrt.VerdictPending)
		a := kit.PendingApproval(t, st, id)
		if err := (agentrt.Operator{Store: st, Now: clock.Now}).ApproveShown(ctx, id, a.ID, a.Hash, "op", ""); err != nil {
			t.Fatal(err)
		}
		return clock, g, deploy, st
	}

	t.Run("within the TTL", func(t *testing.T) {
		clock, g, deploy, _ := approved(t, "run-1")
		clock.Advance(30 * time.Second)
		s, v, err := g.Attach(ctx, "run-1")
		if err != nil || v.Outcome != agentrt.VerdictAllowed {
			t.Fatalf("Attach: %s, %v", v.Outcome, err)
		}
		clock.Advance(29 * time.Second)
		if _, err := s.Current().Execute(ctx); err != nil {
			t.Fatalf("Execute within the TTL: %v", err)
		}
		if n := len(deploy.args()); n != 1 {
			t.Fatalf("deploy ran %d times", n)
		}
		s.Close()
	})

	t.Run("expired while held", func(t *testing.T) {
		clock, g, deploy, st := approved(t, "run-1")
		clock.Advance(30 * time.Second)
		s, v, err := g.Attach(ctx, "run-1")
		if err != nil || v.Outcome != agentrt.VerdictAllowed {
			t.Fatalf("Attach within the TTL: %s, %v", v.Outcome, err)
		}
		clock.Advance(31 * time.Second) // 61s after the grant
		_, err = s.Current().Execute(ctx)
		if !errors.Is(err, agentrt.ErrApprovalExpired) || !errors.Is(err, agentrt.ErrNotPending) {
			t.Fatalf("Execute past the TTL: %v, want ErrApprovalExpired", err)
		}
		if n := len(deploy.args()); n != 0 {
			t.Fatalf("an expired grant ran %d times", n)
		}
		run := kit.MustRun(t, st, "run-1")
		if run.Status != agentrt.RunCancelled || run.Reason != agentrt.ReasonApprovalExpired || run.LeaseOwner != "" {
			t.Fatalf("run %s %s leased %q", run.Status, run.Reason, run.LeaseOwner)
		}
		if a := kit.MustApprovals(t, st, "run-1")[0]; a.Status != agentrt.ApprovalExpired {
			t.Errorf("approval %s, want expired", a.Status)
		}
		if n := len(kit.EventsOf(t, st, "run-1", agentrt.EventToolStarted)); n != 0 {
			t.Errorf("%d tool starts recorded", n)
		}
		if !s.Done() {
			t.Error("the session is not over")
		}
		if _, err := s.Step(ctx); !errors.Is(err, agentrt.ErrRunState) {
			t.Errorf("Step after expiry: %v, want ErrRunState", err)
		}
		if _, _, err := g.Attach(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunState) {
			t.Errorf("Attach of the cancelled run: %v", err)
		}
	})
}

// A session abandoned between an allowed verdict and Execute runs nothing.
// Crashed, its lease lapses and a fresh gate marks the step interrupted and
// goes on; closed, the run is free at once. Either way the abandoned step
// cannot execute afterwards.
func caseGate_AbandonedAfterAllowedRunsNothing(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute

	t.Run("crashed", func(t *testing.T) {
		st, db := lkOpen(t, bk)
		note := lkNewTool("note", agentrt.LocalMutation, nil)
		gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, nil)
		_, stepA := lkBegin(t, gA, "run-1", agentrt.DefaultLimits())
		lkPropose(t, stepA, lkCall("note", `{"text":"a"}`), agentrt.VerdictAllowed)

		stB := db.open(t)
		gB := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: stB, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, db.later(t, 1, ttl))
		sB, v, err := gB.Attach(ctx, "run-1")
		if err != nil || v.Outcome != "" || sB.Current() != nil {
			t.Fatalf("Attach: %q, %v; want an open session with no step", v.Outcome, err)
		}
		if s := kit.MustSteps(t, stB, "run-1")[0]; s.Status != agentrt.StepInterrupted {
			t.Fatalf("step 0 is %s, want interrupted", s.Status)
		}
		before := db.snapshot(t)
		if _, err := stepA.Execute(ctx); !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("the abandoned step's Execute: %v, want ErrLeaseLost", err)
		}
		db.requireUnchanged(t, before, "the abandoned step's Execute")
		lkFinish(t, sB)
		if n := len(note.args()); n != 0 {
			t.Fatalf("note ran %d times", n)
		}
	})

	t.Run("closed", func(t *testing.T) {
		st, _ := lkOpen(t, bk)
		note := lkNewTool("note", agentrt.LocalMutation, nil)
		g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, nil)
		s, step := lkBegin(t, g, "run-1", agentrt.DefaultLimits())
		lkPropose(t, step, lkCall("note", `{"text":"a"}`), agentrt.VerdictAllowed)
		s.Close()
		if _, err := step.Execute(ctx); !errors.Is(err, agentrt.ErrSessionClosed) {
			t.Fatalf("Execute after Close: %v, want ErrSessionClosed", err)
		}
		if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunRunning || r.LeaseOwner != "" {
			t.Fatalf("closed session left run %s leased %q", r.Status, r.LeaseOwner)
		}
		// Free at once: another gate, on the real clock, takes it.
		s2, v, err := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}}}, nil).Attach(ctx, "run-1")
		if err != nil || v.Outcome != "" {
			t.Fatalf("Attach after Close: %q, %v", v.Outcome, err)
		}
		if n := len(kit.EventsOf(t, st, "run-1", agentrt.EventLeaseTakenOver)); n != 0 {
			t.Errorf("%d takeovers of a released lease", n)
		}
		lkFinish(t, s2)
		if n := len(note.args()); n != 0 {
			t.Fatalf("note ran %d times", n)
		}
	})
}

// A session is abandoned while its tool runs: its process stalls, the
// lease lapses, and a fresh gate without Reconcile pauses the run on an
// interrupted_side_effect approval. The abandoned session cannot record
// over the run when its tool returns. Approved, the call runs once more on
// the same step.
func caseGate_AbandonedDuringExecutePausesForAnOperator(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute
	st, db := lkOpen(t, bk)
	inTool, finish := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	note := lkNewTool("note", agentrt.LocalMutation, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		if calls.Add(1) == 1 {
			close(inTool)
			<-finish
		}
		return agentrt.ToolResult{Content: json.RawMessage(`{"noted":true}`)}, nil
	})
	gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, nil)
	_, stepA := lkBegin(t, gA, "run-1", agentrt.DefaultLimits())
	lkPropose(t, stepA, lkCall("note", `{"text":"a"}`), agentrt.VerdictAllowed)
	executed := make(chan error, 1)
	go func() {
		_, err := stepA.Execute(ctx)
		executed <- err
	}()
	lkSignal(t, inTool, "the tool running")

	stB := db.open(t)
	gB := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: stB, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, db.later(t, 1, ttl))
	sB, v, err := gB.Attach(ctx, "run-1")
	if err != nil || v.Outcome != agentrt.VerdictPending || v.Approval == nil || !sB.Done() {
		t.Fatalf("Attach: %s, %v; want pending and the session over", v.Outcome, err)
	}
	if v.Approval.Kind != agentrt.InterruptedSideEffect || v.Approval.StepID != stepA.ID() || !strings.Contains(string(v.Approval.Presentation), "outcome is unknown") {
		t.Fatalf("approval %s on step %s: %s", v.Approval.Kind, v.Approval.StepID, v.Approval.Presentation)
	}
	before := db.snapshot(t)
	close(finish)
	if err := lkAwait(t, executed, "the abandoned Execute"); !errors.Is(err, agentrt.ErrLeaseLost) {
		t.Fatalf("the abandoned Execute returned %v, want ErrLeaseLost", err)
	}
	db.requireUnchanged(t, before, "the abandoned session's late outcome")

	if err := (agentrt.Operator{Store: stB}).ApproveShown(ctx, "run-1", v.Approval.ID, v.Approval.Hash, "op", "again"); err != nil {
		t.Fatal(err)
	}
	s2, v2, err := gB.Attach(ctx, "run-1")
	if err != nil || v2.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Attach after approval: %s, %v", v2.Outcome, err)
	}
	if _, err := s2.Current().Execute(ctx); err != nil {
		t.Fatal(err)
	}
	note.mu.Lock()
	got := append([]agentrt.ToolCall(nil), note.calls...)
	note.mu.Unlock()
	if len(got) != 2 || got[1].StepID != stepA.ID() {
		t.Fatalf("%d calls; want the one cut off and one approved re-run on the same step", len(got))
	}
	lkFinish(t, s2)
}

// A session's lease is lost, by lapsing on its own clock or to another
// owner's takeover. Every later call is refused with ErrLeaseLost and
// starts nothing: no step, decision, tool call or model request.
func caseGate_CallsAfterTheLeaseIsLostAreRefused(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute

	// refusedAll makes every call on s and step and requires each to fail
	// with ErrLeaseLost and change nothing.
	refusedAll := func(t *testing.T, s *agentrt.GateSession, step *agentrt.OpenStep, snap func() map[string][]string) {
		t.Helper()
		before := snap()
		calls := map[string]func() error{
			"Step":    func() error { _, err := s.Step(ctx); return err },
			"Input":   func() error { _, err := s.Input(ctx); return err },
			"Propose": func() error { _, err := step.Propose(ctx, lkCall("note", "{}")); return err },
			"Execute": func() error { _, err := step.Execute(ctx); return err },
			"Fail":    func() error { _, err := step.Fail(ctx, errors.New("gave up")); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, agentrt.ErrLeaseLost) {
				t.Errorf("%s after the lease was lost: %v, want ErrLeaseLost", name, err)
			}
		}
		if !s.Done() || s.Current() != nil {
			t.Errorf("session done %v, current %v", s.Done(), s.Current())
		}
		if after := snap(); !reflect.DeepEqual(before, after) {
			t.Errorf("refused calls changed the store")
		}
	}

	t.Run("lapsed", func(t *testing.T) {
		st, db := lkOpen(t, bk)
		wall := lkNewWall()
		note := lkNewTool("note", agentrt.LocalMutation, nil)
		g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, wall)
		s, step := lkBegin(t, g, "run-1", agentrt.DefaultLimits())
		wall.Advance(ttl)
		if _, err := step.Propose(ctx, lkCall("note", `{"text":"a"}`)); !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("Propose on a lapsed lease: %v, want ErrLeaseLost", err)
		}
		if st0 := kit.MustSteps(t, st, "run-1")[0]; st0.Decision != nil || st0.Status != agentrt.StepDeciding {
			t.Fatalf("a refused proposal was recorded: %s %+v", st0.Status, st0.Decision)
		}
		refusedAll(t, s, step, func() map[string][]string { return db.snapshot(t) })
		if n := len(note.args()); n != 0 {
			t.Fatalf("note ran %d times", n)
		}
		if r := kit.MustRun(t, st, "run-1"); r.LeaseOwner != "" {
			t.Errorf("the lapsed session left its lease on the run: %q", r.LeaseOwner)
		}
	})

	t.Run("taken over", func(t *testing.T) {
		st, db := lkOpen(t, bk)
		note := lkNewTool("note", agentrt.LocalMutation, nil)
		gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, nil)
		sA, stepA := lkBegin(t, gA, "run-1", agentrt.DefaultLimits())
		lkPropose(t, stepA, lkCall("note", `{"text":"a"}`), agentrt.VerdictAllowed)

		stB := db.open(t)
		gB := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: stB, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, db.later(t, 1, ttl))
		sB, _, err := gB.Attach(ctx, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		before := db.snapshot(t)
		if _, err := stepA.Execute(ctx); !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("Execute after a takeover: %v, want ErrLeaseLost", err)
		}
		db.requireUnchanged(t, before, "Execute after a takeover")
		refusedAll(t, sA, stepA, func() map[string][]string { return db.snapshot(t) })
		if n := len(note.args()); n != 0 {
			t.Fatalf("note ran %d times", n)
		}
		lkFinish(t, sB) // the new owner is unaffected
	})

	t.Run("model request", func(t *testing.T) {
		st, db := lkOpen(t, bk)
		wall := lkNewWall()
		var dispatched atomic.Int64
		model := lkModel{generate: func(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
			dispatched.Add(1)
			return agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}, nil
		}}
		g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, LeaseTTL: ttl, Model: &agentrt.ModelConfig{Model: model}}}, wall)
		s, step := lkBegin(t, g, "run-1", agentrt.DefaultLimits())
		m := step.Model()
		if m == nil {
			t.Fatal("no model for an open step")
		}
		wall.Advance(ttl)
		_, err := m.Generate(ctx, agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser,
			Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}, MaxOutputTokens: 8})
		if !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("Generate on a lapsed lease: %v, want ErrLeaseLost", err)
		}
		if _, err := m.Generate(ctx, agentrt.ModelRequest{}); !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("second Generate: %v, want ErrLeaseLost", err)
		}
		if n := dispatched.Load(); n != 0 {
			t.Fatalf("%d model requests dispatched", n)
		}
		refusedAll(t, s, step, func() map[string][]string { return db.snapshot(t) })
	})
}

// A proposal whose arguments hold a number past the bound the runtime
// accepts is an invalid decision: recorded verbatim out of band, denied
// with an invalid_decision observation, never handed to the schema library
// or the tool, and the session goes on.
func caseGate_HugeNumberIsAnInvalidDecision(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	note := lkNewTool("note", agentrt.LocalMutation, nil)
	var judged atomic.Int64
	policy := agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
		judged.Add(1)
		return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
	})
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, Policy: policy}}, nil)
	s, err := g.Begin(ctx, "run-1", "goal", agentrt.Limits{MaxSteps: 10, MaxConsecutiveToolFailures: 5, LoopThreshold: 3})
	if err != nil {
		t.Fatal(err)
	}
	long := `{"n":1` + strings.Repeat("0", 10001) + `}`
	for i, args := range []string{`{"n":1e1000000}`, `{"n":0.1e-9223372036854775808}`, `{"n":1E+10001}`, long} {
		step, err := s.Step(ctx)
		if err != nil || step == nil {
			t.Fatalf("Step: %v", err)
		}
		v := lkPropose(t, step, lkCall("note", args), agentrt.VerdictDenied)
		if v.Observation == nil || v.Observation.Kind != agentrt.ObsInvalidDecision || !strings.Contains(v.Observation.Summary, "number") {
			t.Fatalf("args %.40s: observation %+v", args, v.Observation)
		}
		rec := kit.MustSteps(t, st, "run-1")[i]
		if rec.Status != agentrt.StepFailed || rec.Decision == nil || rec.Decision.InvalidArgs != args || len(rec.Decision.Args) != 0 {
			t.Fatalf("args %.40s recorded as %s %+v", args, rec.Status, rec.Decision)
		}
		if s.Done() {
			t.Fatal("an invalid decision ended the session")
		}
	}
	if n := judged.Load(); n != 0 {
		t.Errorf("the policy judged %d invalid requests", n)
	}
	if n := len(note.args()); n != 0 {
		t.Errorf("note ran %d times", n)
	}
	lkFinish(t, s)
}

// A policy that reads bytes is handed one form of a request through a
// gate: on Propose and on Attach's re-evaluation it receives the same
// PolicyJSON bytes for the arguments and the tool's schema, whatever the
// caller's spelling, so a grant made at Propose is recognised at Attach.
func casePolicy_GateProposeAndAttachHandedTheSameBytes(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	note := lkNewTool("note", agentrt.RemoteMutation, nil)
	var mu sync.Mutex
	var args, schemas []string
	policy := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		mu.Lock()
		args = append(args, string(req.Args))
		schemas = append(schemas, string(req.Spec.InputSchema))
		mu.Unlock()
		// The approval is built from the bytes, as a byte-matching policy
		// would build it.
		return agentrt.NeedApproval("bytes", "check the bytes", json.RawMessage(req.Args), json.RawMessage(req.Args))
	})
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, Policy: policy}}, nil)
	_, step := lkBegin(t, g, "run-1", agentrt.DefaultLimits())
	spelled := "{ \"text\" : \"<b>&</b> \\u00e9\\u2028\",\n  \"n\" : 10 }"
	lkPropose(t, step, lkCall("note", spelled), agentrt.VerdictPending)
	a := kit.PendingApproval(t, st, "run-1")
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	s, v, err := g.Attach(ctx, "run-1")
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Attach: %s, %v; want the grant recognised", v.Outcome, err)
	}
	wantArgs, err := agentrt.PolicyJSON([]byte(spelled))
	if err != nil {
		t.Fatal(err)
	}
	wantSchema, err := agentrt.PolicyJSON([]byte(lkSchema))
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 2 || args[0] != string(wantArgs) || args[1] != string(wantArgs) {
		t.Fatalf("policy handed arguments %q, want %q twice", args, wantArgs)
	}
	if len(schemas) != 2 || schemas[0] != string(wantSchema) || schemas[1] != string(wantSchema) {
		t.Fatalf("policy handed schemas %q, want %q twice", schemas, wantSchema)
	}
	if strings.Contains(args[0], `\u003c`) || strings.Contains(args[0], " : ") {
		t.Fatalf("policy form %s is escaped or spaced", args[0])
	}
	if _, err := s.Current().Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(note.args()); n != 1 {
		t.Fatalf("note ran %d times", n)
	}
	lkFinish(t, s)
}

// Calls made out of turn are refused with ErrRunState and change nothing,
// and the session stays usable: a second open step, Execute without an
// allowed verdict, a second decision, Fail without an error or after a
// decision, and any call on a step that has ended. After Close every call
// fails with ErrSessionClosed.
func caseGate_MisuseIsRefused(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	note := lkNewTool("note", agentrt.LocalMutation, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}}}, nil)
	s, step := lkBegin(t, g, "run-1", agentrt.DefaultLimits())

	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, agentrt.ErrRunState) {
			t.Fatalf("%s: %v, want ErrRunState", what, err)
		}
	}
	before := db.snapshot(t)
	_, err := step.Execute(ctx)
	refused("Execute before a decision", err)
	_, err = step.Fail(ctx, nil)
	refused("Fail without an error", err)
	db.requireUnchanged(t, before, "calls out of turn")

	lkPropose(t, step, lkCall("note", `{"text":"a"}`), agentrt.VerdictAllowed)
	before = db.snapshot(t)
	_, err = step.Propose(ctx, lkCall("note", `{"text":"b"}`))
	refused("a second decision", err)
	_, err = step.Fail(ctx, errors.New("changed my mind"))
	refused("Fail after a decision", err)
	db.requireUnchanged(t, before, "calls out of turn on a decided step")

	if _, err := step.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	before = db.snapshot(t)
	_, err = step.Execute(ctx)
	refused("a second Execute", err)
	_, err = step.Propose(ctx, lkComplete())
	refused("Propose on an ended step", err)
	db.requireUnchanged(t, before, "calls on an ended step")
	if s.Done() {
		t.Fatal("refused calls ended the session")
	}

	next, err := s.Step(ctx)
	if err != nil || next == nil || next.Index() != 1 {
		t.Fatalf("Step after refused calls: %v, %v", next, err)
	}
	in, err := s.Input(ctx)
	if err != nil || in.Steps.Len() != 1 || in.Run.ID != "run-1" || len(in.Tools) != 1 {
		t.Fatalf("Input: %+v, %v", in, err)
	}
	in.Steps.At(0).Decision.Tool = "changed"
	if again, _ := s.Input(ctx); again.Steps.At(0).Decision.Tool != "note" {
		t.Fatal("Input handed out the session's own step")
	}
	s.Close()
	if _, err := next.Propose(ctx, lkComplete()); !errors.Is(err, agentrt.ErrSessionClosed) {
		t.Fatalf("Propose after Close: %v, want ErrSessionClosed", err)
	}
	if _, err := s.Step(ctx); !errors.Is(err, agentrt.ErrSessionClosed) {
		t.Fatalf("Step after Close: %v, want ErrSessionClosed", err)
	}
	if n := len(note.args()); n != 1 {
		t.Fatalf("note ran %d times", n)
	}
}
