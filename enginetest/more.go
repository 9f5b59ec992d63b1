package enginetest

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testhook"
	"github.com/agentrt/agentrt/scripted"
)

// A process is killed after a local mutation took effect and before its
// outcome was recorded. Once its lease lapses (by the backend's lease
// clock: the database's on Postgres), a second process resumes the run: it
// never runs the call again by itself, but pauses it for an operator as an
// interrupted side effect; approved, it runs once more and completes.
func interruptedSideEffect(t *testing.T, open func(*testing.T) agentrt.Store) {
	ctx := context.Background()
	const ttl = 500 * time.Millisecond
	const id = "run-interrupted"
	first := open(t)
	appendTool := simpleTool("append", agentrt.LocalMutation)
	crashed := make(chan struct{})
	var fired atomic.Bool
	restore := testhook.Set(func(point, runID string, step int) {
		if runID != id || point != testhook.ToolEffect || step != 0 || !fired.CompareAndSwap(false, true) {
			return
		}
		first.Close() // the process dies: nothing more reaches the database
		close(crashed)
		runtime.Goexit()
	})
	defer restore()
	script := func() agentrt.Agent {
		return &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("append", `{"text":"line"}`, "append"), scripted.Complete(`{}`)}}
	}
	dA, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: first, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{appendTool}, LeaseTTL: ttl}, Agent: script()})
	if err != nil {
		t.Fatal(err)
	}
	go dA.StartWithID(ctx, id, "goal", agentrt.DefaultLimits())
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never reached its crash point")
	}
	restore()
	st := closeLater(t, open(t))
	time.Sleep(2 * ttl) // the dead process's lease lapses
	dB, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{appendTool}, LeaseTTL: ttl}, Agent: script()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := dB.Resume(ctx, id)
	if err != nil || r.Status != agentrt.RunWaiting || appendTool.n.Load() != 1 {
		t.Fatalf("resume after the crash = %s, %v, %d calls; want WAITING and the one call", r.Status, err, appendTool.n.Load())
	}
	a := kit.PendingApproval(t, st, id)
	if a.Kind != agentrt.InterruptedSideEffect || a.Request.Spec.Name != "append" || string(a.Request.Args) != `{"text":"line"}` {
		t.Fatalf("the pause is %s for %s %s, want an interrupted side effect of the call", a.Kind, a.Request.Spec.Name, a.Request.Args)
	}
	if _, err := dB.Resume(ctx, id); !errors.Is(err, agentrt.ErrRunState) || appendTool.n.Load() != 1 {
		t.Fatalf("resume of an undecided pause = %v, %d calls", err, appendTool.n.Load())
	}
	if err := agentrt.ApproveShown(ctx, st, nil, id, a.ID, a.Hash, "op", "run it again"); err != nil {
		t.Fatal(err)
	}
	r, err = dB.Resume(ctx, id)
	if err != nil || r.Status != agentrt.RunCompleted || appendTool.n.Load() != 2 {
		t.Fatalf("resume after the approval = %s, %v, %d calls; want COMPLETED and one more", r.Status, err, appendTool.n.Load())
	}
	verify(t, st)
}

// A gate (a loop the caller owns) pauses a remote call for approval and,
// once approved and attached, executes exactly the recorded request.
func gateApproved(t *testing.T, open func(*testing.T) agentrt.Store) {
	ctx := context.Background()
	st := closeLater(t, open(t))
	deploy := simpleTool("deploy", agentrt.RemoteMutation)
	g, s, step := kit.BeginGate(t, agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{deploy}}, "run-gate", "goal", agentrt.DefaultLimits())
	v, err := step.Propose(ctx, scripted.ToolCall("deploy", `{"v":1}`, "ship"))
	if err != nil || v.Outcome != agentrt.VerdictPending || !s.Done() {
		t.Fatalf("propose = %s, %v", v.Outcome, err)
	}
	s.Close()
	a := kit.PendingApproval(t, st, "run-gate")
	if err := agentrt.ApproveShown(ctx, st, nil, "run-gate", a.ID, a.Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	s2, v2, err := g.Attach(ctx, "run-gate")
	if err != nil || v2.Outcome != agentrt.VerdictAllowed || v2.Request == nil || string(v2.Request.Args) != `{"v":1}` {
		t.Fatalf("attach = %s, %v", v2.Outcome, err)
	}
	if _, err := s2.Current().Execute(ctx); err != nil || deploy.n.Load() != 1 {
		t.Fatalf("execute = %v, %d calls", err, deploy.n.Load())
	}
	next, err := s2.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := next.Propose(ctx, scripted.Complete(`{}`)); err != nil || v.Outcome != agentrt.VerdictEnded || s2.Run().Status != agentrt.RunCompleted {
		t.Fatalf("complete = %s, %v, run %s", v.Outcome, err, s2.Run().Status)
	}
	s2.Close()
	verify(t, st)
}

// Recheck re-asks a policy about every decision a run recorded: the one
// that decided agrees; a policy that now denies the call differs.
func recheck(t *testing.T, open func(*testing.T) agentrt.Store) {
	ctx := context.Background()
	st := closeLater(t, open(t))
	note := simpleTool("note", agentrt.LocalMutation)
	d := driver(t, st, &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("note", `{}`, "a"), scripted.Complete(`{}`)}}, note)
	r, err := d.Start(ctx, "g", agentrt.DefaultLimits())
	if err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("run = %s, %v", r.Status, err)
	}
	same, err := agentrt.Recheck(ctx, st, r.ID, agentrt.DefaultPolicy(), agentrt.RecheckOptions{})
	if err != nil || !same.Same() || len(same.Evaluations) != 1 {
		t.Fatalf("recheck with the same policy = %+v, %v", same, err)
	}
	deny := agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
		return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "no longer"}, nil
	})
	diff, err := agentrt.Recheck(ctx, st, r.ID, deny, agentrt.RecheckOptions{})
	if err != nil || diff.Same() || len(diff.Differences()) != 1 {
		t.Fatalf("recheck with a denying policy = %+v, %v", diff, err)
	}
}

// A run that requires signed grants is granted by an enrolled key's
// signature over the statement, recorded with the approver's name, and
// the grant runs once.
func signedGrant(t *testing.T, open func(*testing.T) agentrt.Store) {
	ctx := context.Background()
	st := closeLater(t, open(t))
	ap, key := keyApprover(t, agentrt.Operator{Store: st}, "alice")
	limits := agentrt.DefaultLimits()
	limits.RequireSignedGrant = true
	d, send, r, a := startWaiting(t, st, limits)
	sig, err := agentrt.SignStatement(key, ap, agentrt.Statement{RunID: r.ID, ApprovalID: a.ID, ApprovalHash: a.Hash,
		Decision: agentrt.StatementApprove, Nonce: agentrt.NewNonce(), Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := agentrt.ApproveShown(ctx, st, nil, r.ID, a.ID, a.Hash, "", "", agentrt.WithSignature(sig)); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetApproval(ctx, r.ID, a.ID)
	if err != nil || got.Status != agentrt.ApprovalApproved || got.DecidedBy != "alice" {
		t.Fatalf("approval = %s by %q, %v", got.Status, got.DecidedBy, err)
	}
	r, err = d.Resume(ctx, r.ID)
	if err != nil || r.Status != agentrt.RunCompleted || send.n.Load() != 1 {
		t.Fatalf("resume = %s, %v, %d calls", r.Status, err, send.n.Load())
	}
	verify(t, st)
}
