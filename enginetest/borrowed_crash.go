package enginetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// The gate after a crash: calls cut off while their tool or body ran are
// never run again without an operator, and one approval of each is enough.
// A session that took the run over while ExecuteFunc's body ran (the first
// process died there) never calls the body again by itself: the step is
// interrupted and, the tool not being read-only, waits on an operator's
// interrupted_side_effect approval that says the outcome is unknown.
// Approving it is the one approval the policy asks for this same request:
// Attach opens the step and the body runs once more.
func caseGate_ExecuteFuncIsNotRunAgainAfterACrash(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute
	st, db := lkOpen(t, bk)
	spec := agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))
	gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{spec}, LeaseTTL: ttl}}, nil)
	_, step := lkBegin(t, gA, "run-1", agentrt.FrameworkLimits())
	d := lkCall("send", `{"text":"x"}`)
	d.CallID = "call-1"
	v := lkPropose(t, step, d, agentrt.VerdictPending)
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", v.Approval.ID, v.Approval.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	sA, _, err := gA.Attach(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	inBody, finish := make(chan struct{}), make(chan struct{})
	executed := make(chan error, 1)
	go func() {
		_, err := sA.Current().ExecuteFunc(ctx, func(context.Context, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			close(inBody)
			<-finish
			return nil, nil
		})
		executed <- err
	}()
	lkSignal(t, inBody, "the body running")

	gB := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: []agentrt.Tool{spec}, LeaseTTL: ttl}}, db.later(t, 1, ttl))
	sB, vB, err := gB.Attach(ctx, "run-1")
	if err != nil || vB.Outcome != agentrt.VerdictPending || !sB.Done() {
		t.Fatalf("Attach after the crash: %s, %v", vB.Outcome, err)
	}
	ia := vB.Approval
	if ia.Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(ia.Presentation), "may already have taken effect") {
		t.Fatalf("the interruption's approval %s: %s", ia.Kind, ia.Presentation)
	}
	close(finish)
	lkAwait(t, executed, "the abandoned ExecuteFunc")
	// One approval opens the step again: no second one is asked for.
	_, open := bwAttachGranted(t, gB, st, ia, "call-1", step.ID())
	if _, err := open.ExecuteFunc(ctx, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		return json.RawMessage(`{"sent":true}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the body ran %d times, want the one cut off and one approved re-run", n)
	}
	if apps := kit.MustApprovals(t, st, "run-1"); len(apps) != 2 {
		t.Fatalf("%d approvals were asked, want the policy's and the interruption's", len(apps))
	}
	if callID := recordedCallID(t, st, "run-1"); callID != "call-1" {
		t.Fatalf("step.decided records call id %q", callID)
	}
}

// recordedCallID is the call id the run's last step.decided records.
func recordedCallID(t *testing.T, st agentrt.Store, runID string) string {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var callID string
	for _, ev := range evs {
		if ev.Type == agentrt.EventStepDecided {
			dec, err := agentrt.PayloadAs[agentrt.Decision](ev)
			if err != nil {
				t.Fatal(err)
			}
			callID = dec.CallID
		}
	}
	return callID
}

// Under a policy that would now deny the request, approving the
// interruption's approval still runs nothing: the policy is asked first.
func caseGate_CrashApprovalDoesNotOverrideADeny(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute
	st, db := lkOpen(t, bk)
	var deny atomic.Bool
	policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		if deny.Load() {
			return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "no longer"}, nil
		}
		return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
	})
	inTool, finish := make(chan struct{}), make(chan struct{})
	note := lkNewTool("note", agentrt.LocalMutation, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		close(inTool)
		<-finish
		return agentrt.ToolResult{}, nil
	})
	gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: policy, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, nil)
	_, step := lkBegin(t, gA, "run-1", agentrt.FrameworkLimits())
	lkPropose(t, step, lkCall("note", `{"text":"x"}`), agentrt.VerdictAllowed)
	abandoned := make(chan struct{})
	go func() {
		defer close(abandoned)
		_, _ = step.Execute(ctx)
	}()
	lkSignal(t, inTool, "the tool running")
	gB := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Policy: policy, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, db.later(t, 1, ttl))
	_, v, err := gB.Attach(ctx, "run-1")
	if err != nil || v.Outcome != agentrt.VerdictPending {
		t.Fatalf("Attach after the crash: %s, %v", v.Outcome, err)
	}
	close(finish)
	lkSignal(t, abandoned, "the abandoned Execute")
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", v.Approval.ID, v.Approval.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	deny.Store(true)
	_, v2, err := gB.Attach(ctx, "run-1")
	if err != nil || v2.Outcome != agentrt.VerdictDenied {
		t.Fatalf("Attach under a denying policy: %s, %v", v2.Outcome, err)
	}
	if n := len(note.args()); n != 1 {
		t.Fatalf("note ran %d times, want only the call cut off", n)
	}
}

// Two calls of one turn were executing when their process died. The
// takeover asks an operator about each, on its own interrupted_side_effect
// approval, and runs neither; each approved, each runs once more, one
// Attach at a time.
func caseGate_EveryCallCutOffByACrashIsAskedAbout(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute
	st, db := lkOpen(t, bk)
	var inTools sync.WaitGroup
	inTools.Add(2)
	finish := make(chan struct{})
	var first sync.Map
	note := lkNewTool("note", agentrt.LocalMutation, func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
		if _, again := first.LoadOrStore(c.StepID, true); !again {
			inTools.Done()
			<-finish
		}
		return agentrt.ToolResult{}, nil
	})
	gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, nil)
	s := bwBegin(t, gA)
	var abandoned sync.WaitGroup
	for _, text := range []string{"a", "b"} {
		step, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lkPropose(t, step, lkCall("note", `{"text":"`+text+`"}`), agentrt.VerdictAllowed)
		abandoned.Add(1)
		go func() {
			defer abandoned.Done()
			_, _ = step.Execute(ctx)
		}()
	}
	both := make(chan struct{})
	go func() { inTools.Wait(); close(both) }()
	lkSignal(t, both, "both tools running")

	gB := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: []agentrt.Tool{note}, LeaseTTL: ttl}}, db.later(t, 1, ttl))
	_, v, err := gB.Attach(ctx, "run-1")
	if err != nil || v.Outcome != agentrt.VerdictPending {
		t.Fatalf("Attach after the crash: %s, %v", v.Outcome, err)
	}
	close(finish)
	done := make(chan struct{})
	go func() { abandoned.Wait(); close(done) }()
	lkSignal(t, done, "the abandoned Executes")
	apps := kit.MustApprovals(t, st, "run-1")
	if len(apps) != 2 || apps[0].StepID == apps[1].StepID {
		t.Fatalf("%d approvals; want one for each call cut off", len(apps))
	}
	for _, a := range apps {
		if a.Kind != agentrt.InterruptedSideEffect || a.Status != agentrt.ApprovalPending {
			t.Fatalf("approval %s %s", a.Kind, a.Status)
		}
		if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(note.args()); n != 2 {
		t.Fatalf("note ran %d times before the approvals, want the two cut off", n)
	}
	for i := 0; i < 2; i++ {
		s2, v, err := gB.Attach(ctx, "run-1")
		if err != nil || v.Outcome != agentrt.VerdictAllowed {
			t.Fatalf("Attach %d: %s, %v", i, v.Outcome, err)
		}
		if _, err := s2.Current().Execute(ctx); err != nil {
			t.Fatal(err)
		}
		s2.Close()
	}
	if n := len(note.args()); n != 4 {
		t.Fatalf("note ran %d times, want each call cut off and re-run once", n)
	}
}
