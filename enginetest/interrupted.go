package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testhook"
)

// lkCrash makes the process "crash" the first time runID reaches point at
// step (-1: any step): the store is closed, so nothing more is written and
// the lease stays in the row, and the goroutine ends where it stands. The
// channel closes when it has happened.
func lkCrash(t testing.TB, runID, point string, step int, st agentrt.Store) <-chan struct{} {
	t.Helper()
	crashed := make(chan struct{})
	var fired atomic.Bool
	restore := testhook.Set(func(p, id string, i int) {
		if id != runID || p != point || (step >= 0 && i != step) || !fired.CompareAndSwap(false, true) {
			return
		}
		st.Close()
		close(crashed)
		runtime.Goexit()
	})
	t.Cleanup(restore)
	return crashed
}

// lkCrashed starts run id on d and waits for the crash.
func lkCrashed(t testing.TB, d *agentrt.Driver, id string, crashed <-chan struct{}) {
	t.Helper()
	done := lkGo(func() (agentrt.Run, error) {
		return d.StartWithID(context.Background(), id, "goal", agentrt.DefaultLimits())
	})
	select {
	case <-crashed:
	case out := <-done:
		t.Fatalf("run returned %s, %v before reaching its crash point", out.val.Status, out.err)
	case <-time.After(lkWait):
		t.Fatalf("no crash within %s", lkWait)
	}
}

// lkLater is a lease clock n lease lengths ahead of now: a process whose
// clock says every lease written before it lapsed.
func lkLater(n int, ttl time.Duration) *lkWall {
	w := lkNewWall()
	w.Advance(time.Duration(n) * 2 * ttl)
	return w
}

// later is lkLater for a process about to take over the database's runs.
// A store that judges leases by the database's clock is not moved by the
// clock lkLater returns, so there every lease held in the database is
// lapsed as well.
func (d *database) later(t testing.TB, n int, ttl time.Duration) *lkWall {
	t.Helper()
	d.lapseAll(t)
	return lkLater(n, ttl)
}

// A step was cut off after its tool took effect and before the outcome was
// recorded. On resume the consumer's Reconcile reads its own journal and
// answers: continue (the agent decides anew), completed (the run completes
// with the journal's result), waiting (the call waits, on the same step,
// for the approval the consumer names, and runs once more when granted), or
// conflict (the run fails). The runtime never runs the call again by
// itself.
func caseResume_InterruptedStepIsReconciledAndContinued(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute

	type env struct {
		st    agentrt.Store
		send  *lkTool
		step0 agentrt.Step
		views []agentrt.RunView
	}
	// crash runs step 0's call to send until its effect and crashes, then
	// returns a resumer configured with reconcile.
	crash := func(t *testing.T, id string, reconcile func(agentrt.RunView) agentrt.Reconciliation, agent agentrt.Agent) (*env, *agentrt.Driver) {
		st, db := lkOpen(t, bk)
		send := lkNewTool("send", agentrt.LocalMutation, nil)
		dA := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{send}, LeaseTTL: ttl}, Agent: lkScript(t, lkCall("send", `{"text":"hello"}`))}, nil)
		lkCrashed(t, dA, id, lkCrash(t, id, "tool.effect", 0, st))
		e := &env{st: db.open(t), send: send}
		e.step0 = kit.MustSteps(t, e.st, id)[0]
		if e.step0.Status != agentrt.StepExecuting || len(send.args()) != 1 {
			t.Fatalf("after the crash: step 0 %s, %d calls", e.step0.Status, len(send.args()))
		}
		var mu sync.Mutex
		cfg := agentrt.Config{
			EngineConfig: agentrt.EngineConfig{
				Store:    e.st,
				Tools:    []agentrt.Tool{send},
				LeaseTTL: ttl,
				Reconcile: func(_ context.Context, v agentrt.RunView) (agentrt.Reconciliation, error) {
					mu.Lock()
					// A view's lists show the record as it is: keep copies.
					kept := v
					kept.Steps, kept.Approvals = agentrt.NewSteps(v.Steps.Records()...), agentrt.NewApprovals(v.Approvals.Records()...)
					e.views = append(e.views, kept)
					mu.Unlock()
					return reconcile(v), nil
				},
			},
			Agent: agent,
		}
		return e, lkDriver(t, cfg, db.later(t, 1, ttl))
	}
	// checkView requires the one reconciliation to have seen step 0 marked
	// interrupted while executing, with the call it was making.
	checkView := func(t *testing.T, e *env) {
		t.Helper()
		if len(e.views) != 1 {
			t.Fatalf("Reconcile called %d times, want 1", len(e.views))
		}
		v := e.views[0]
		if v.Steps.Len() != 1 || v.Steps.At(0).ID != e.step0.ID || v.Steps.At(0).Status != agentrt.StepInterrupted {
			t.Fatalf("reconciliation view steps %+v", v.Steps)
		}
		if d := v.Steps.At(0).Decision; d == nil || d.Tool != "send" || string(d.Args) != `{"text":"hello"}` {
			t.Fatalf("reconciliation view decision %+v", v.Steps.At(0).Decision)
		}
		if c := string(v.Steps.At(0).Observation.Content); !strings.Contains(c, `"previous_status":"executing"`) {
			t.Fatalf("interrupted observation %s", c)
		}
		if v.Run.Status != agentrt.RunRunning {
			t.Fatalf("reconciliation view run status %s", v.Run.Status)
		}
	}

	t.Run("continue", func(t *testing.T) {
		e, d := crash(t, "lk-rec-continue", func(agentrt.RunView) agentrt.Reconciliation {
			return agentrt.Reconciliation{Outcome: agentrt.ReconcileContinue}
		}, lkScript(t, lkCall("send", "{}"), lkComplete()))
		run, err := d.Resume(ctx, "lk-rec-continue")
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("resume: %s, %v", run.Status, err)
		}
		checkView(t, e)
		if n := len(e.send.args()); n != 1 {
			t.Errorf("send ran %d times, want 1", n)
		}
		resumed := kit.EventsOf(t, e.st, "lk-rec-continue", agentrt.EventRunResumed)
		if len(resumed) != 1 || kit.Payload(t, resumed[0])["after"] != "interruption" {
			t.Errorf("run.resumed events %v", resumed)
		}
		if n := len(kit.EventsOf(t, e.st, "lk-rec-continue", agentrt.EventLeaseTakenOver)); n != 1 {
			t.Errorf("%d lease.taken_over events, want 1", n)
		}
		if steps := kit.MustSteps(t, e.st, "lk-rec-continue"); len(steps) != 2 || steps[0].Status != agentrt.StepInterrupted {
			t.Errorf("steps %d, first %s; want step 0 interrupted and a new step", len(steps), steps[0].Status)
		}
	})

	t.Run("completed", func(t *testing.T) {
		e, d := crash(t, "lk-rec-completed", func(agentrt.RunView) agentrt.Reconciliation {
			return agentrt.Reconciliation{Outcome: agentrt.ReconcileCompleted, Result: json.RawMessage(`{"sent":"hello"}`), Detail: "the journal has the message"}
		}, lkNever(t))
		run, err := d.Resume(ctx, "lk-rec-completed")
		if err != nil {
			t.Fatal(err)
		}
		checkView(t, e)
		run = kit.MustRun(t, e.st, "lk-rec-completed")
		if run.Status != agentrt.RunCompleted || run.Reason != agentrt.ReasonGoalCompleted || string(run.Result) != `{"sent":"hello"}` ||
			run.ReasonDetail != "completed by reconciliation: the journal has the message" || run.LeaseOwner != "" {
			t.Errorf("run %s %s %q %s leased %q", run.Status, run.Reason, run.ReasonDetail, run.Result, run.LeaseOwner)
		}
		if n := len(e.send.args()); n != 1 {
			t.Errorf("send ran %d times, want 1", n)
		}
	})

	t.Run("waiting", func(t *testing.T) {
		var e *env
		e, d := crash(t, "lk-rec-waiting", func(v agentrt.RunView) agentrt.Reconciliation {
			pd, err := agentrt.NeedApproval("journal_unsure", "the journal has no record of the message",
				map[string]string{"step": v.Steps.At(0).ID}, map[string]string{"notice": "the message may not have been sent"})
			if err != nil {
				t.Fatal(err)
			}
			return agentrt.Reconciliation{Outcome: agentrt.ReconcileWaiting, Pause: &pd}
		}, lkScript(t, lkCall("send", "{}"), lkComplete()))
		run, err := d.Resume(ctx, "lk-rec-waiting")
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("resume: %s, %v; want waiting", run.Status, err)
		}
		checkView(t, e)
		apps := kit.MustApprovals(t, e.st, "lk-rec-waiting")
		if len(apps) != 1 || apps[0].Kind != "journal_unsure" || apps[0].StepID != e.step0.ID || apps[0].Status != agentrt.ApprovalPending {
			t.Fatalf("approvals %+v", apps)
		}
		if string(apps[0].Request.Args) != `{"text":"hello"}` {
			t.Errorf("the approval binds %s, not the interrupted call", apps[0].Request.Args)
		}
		if s := kit.MustSteps(t, e.st, "lk-rec-waiting")[0]; s.Status != agentrt.StepAwaitingApproval || s.Observation != nil {
			t.Errorf("step 0 %s with observation %+v; want awaiting approval, cleared", s.Status, s.Observation)
		}
		if n := len(e.send.args()); n != 1 {
			t.Fatalf("send ran %d times before approval, want 1", n)
		}
		if err := (agentrt.Operator{Store: e.st}).ApproveShown(ctx, "lk-rec-waiting", apps[0].ID, apps[0].Hash, "op", "resend"); err != nil {
			t.Fatal(err)
		}
		run, err = d.Resume(ctx, "lk-rec-waiting")
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("resume after approval: %s, %v", run.Status, err)
		}
		e.send.mu.Lock()
		calls := append([]agentrt.ToolCall(nil), e.send.calls...)
		e.send.mu.Unlock()
		if len(calls) != 2 || calls[1].StepID != e.step0.ID || string(calls[1].Args) != `{"text":"hello"}` {
			t.Fatalf("calls %+v; want one more, on step 0, with its arguments", calls)
		}
		if s := kit.MustSteps(t, e.st, "lk-rec-waiting")[0]; s.Status != agentrt.StepDone {
			t.Errorf("step 0 is %s after the approved re-run, want done", s.Status)
		}
		started := kit.EventsOf(t, e.st, "lk-rec-waiting", agentrt.EventToolStarted)
		if len(started) != 2 || kit.Payload(t, started[1])["approval_id"] != apps[0].ID {
			t.Errorf("tool starts %d; the re-run names approval %v", len(started), kit.Payload(t, started[len(started)-1])["approval_id"])
		}
	})

	t.Run("conflict", func(t *testing.T) {
		e, d := crash(t, "lk-rec-conflict", func(agentrt.RunView) agentrt.Reconciliation {
			return agentrt.Reconciliation{Outcome: agentrt.ReconcileConflict, Detail: "the journal and the record disagree"}
		}, lkNever(t))
		if _, err := d.Resume(ctx, "lk-rec-conflict"); err != nil {
			t.Fatal(err)
		}
		checkView(t, e)
		run := kit.MustRun(t, e.st, "lk-rec-conflict")
		if run.Status != agentrt.RunFailed || run.Reason != agentrt.ReasonReconcileConflict || run.ReasonDetail != "the journal and the record disagree" {
			t.Errorf("run %s %s %q", run.Status, run.Reason, run.ReasonDetail)
		}
		if n := len(e.send.args()); n != 1 {
			t.Errorf("send ran %d times, want 1", n)
		}
	})
}

// Without a Reconcile, a step cut off while executing a tool that is not
// read-only pauses the run on an interrupted_side_effect approval whose
// presentation says the outcome is unknown. Approved, the call runs once
// more, on the same step; rejected, the run ends. A crash after the takeover
// still leaves the decision to the operator. A read-only call, or a step
// cut off while deciding, simply continues.
func caseResume_InterruptedSideEffectWaitsForAnOperator(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute

	// crashAt runs a one-call script until point on step 0 and crashes.
	crashAt := func(t *testing.T, id, point string, se agentrt.SideEffect) (st agentrt.Store, db *database, tool *lkTool, step0 agentrt.Step) {
		st, db = lkOpen(t, bk)
		tool = lkNewTool("append", se, nil)
		dA := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{tool}, LeaseTTL: ttl}, Agent: lkScript(t, lkCall("append", `{"text":"line"}`))}, nil)
		lkCrashed(t, dA, id, lkCrash(t, id, point, 0, st))
		st = db.open(t)
		return st, db, tool, kit.MustSteps(t, st, id)[0]
	}
	// requireOperatorPause requires the run to wait on one pending
	// interrupted_side_effect approval for step 0's call.
	requireOperatorPause := func(t *testing.T, st agentrt.Store, id string, step0 agentrt.Step) agentrt.Approval {
		t.Helper()
		if r := kit.MustRun(t, st, id); r.Status != agentrt.RunWaiting || r.LeaseOwner != "" {
			t.Fatalf("run %s leased %q; want waiting and free", r.Status, r.LeaseOwner)
		}
		var pending []agentrt.Approval
		for _, a := range kit.MustApprovals(t, st, id) {
			if a.Status == agentrt.ApprovalPending {
				pending = append(pending, a)
			}
		}
		if len(pending) != 1 {
			t.Fatalf("%d pending approvals, want 1", len(pending))
		}
		a := pending[0]
		if a.Kind != agentrt.InterruptedSideEffect || a.StepID != step0.ID || a.Request.Spec.Name != "append" || string(a.Request.Args) != `{"text":"line"}` {
			t.Fatalf("approval %s for step %s: %s %s", a.Kind, a.StepID, a.Request.Spec.Name, a.Request.Args)
		}
		var pres struct {
			Tool       string          `json:"tool"`
			Args       json.RawMessage `json:"args"`
			SideEffect string          `json:"side_effect"`
			Notice     string          `json:"notice"`
		}
		if err := json.Unmarshal(a.Presentation, &pres); err != nil {
			t.Fatal(err)
		}
		if pres.Tool != "append" || string(pres.Args) != `{"text":"line"}` || pres.SideEffect != string(agentrt.LocalMutation) ||
			!strings.Contains(pres.Notice, "outcome is unknown") || !strings.Contains(pres.Notice, "Approving runs it again") {
			t.Fatalf("presentation %s does not say what is at stake", a.Presentation)
		}
		if s := kit.MustSteps(t, st, id)[0]; s.Status != agentrt.StepAwaitingApproval {
			t.Fatalf("step 0 is %s, want awaiting approval", s.Status)
		}
		return a
	}
	// takeOver resumes id, once its lease has lapsed, with a driver of tool
	// and agent, and requires the run to wait for an operator's decision on
	// step0; it returns the driver and that approval.
	takeOver := func(t *testing.T, st agentrt.Store, db *database, tool *lkTool, agent agentrt.Agent, id string, step0 agentrt.Step) (*agentrt.Driver, agentrt.Approval) {
		t.Helper()
		d := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{tool}, LeaseTTL: ttl}, Agent: agent}, db.later(t, 1, ttl))
		if run, err := d.Resume(ctx, id); err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("resume: %s, %v", run.Status, err)
		}
		return d, requireOperatorPause(t, st, id, step0)
	}

	t.Run("approved runs it once more on the same step", func(t *testing.T) {
		const id = "lk-ise-approved"
		st, db, tool, step0 := crashAt(t, id, "tool.effect", agentrt.LocalMutation)
		d, a := takeOver(t, st, db, tool, lkScript(t, lkCall("append", "{}"), lkComplete()), id, step0)
		if n := len(tool.args()); n != 1 {
			t.Fatalf("the tool ran %d times before the operator decided, want 1", n)
		}

		// Undecided, a resume changes nothing.
		before := db.snapshot(t)
		if _, err := d.Resume(ctx, id); !errors.Is(err, agentrt.ErrRunState) {
			t.Fatalf("resume of an undecided pause: %v, want ErrRunState", err)
		}
		db.requireUnchanged(t, before, "a resume of an undecided pause")

		if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, id, a.ID, a.Hash, "op", "run it again"); err != nil {
			t.Fatal(err)
		}
		run, err := d.Resume(ctx, id)
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("resume after approval: %s, %v", run.Status, err)
		}
		tool.mu.Lock()
		calls := append([]agentrt.ToolCall(nil), tool.calls...)
		tool.mu.Unlock()
		if len(calls) != 2 || calls[1].StepID != step0.ID {
			t.Fatalf("%d calls, last on step %s; want exactly one more, on step 0", len(calls), calls[len(calls)-1].StepID)
		}
		if s := kit.MustSteps(t, st, id)[0]; s.Status != agentrt.StepDone {
			t.Errorf("step 0 is %s, want done", s.Status)
		}
		if _, err := d.Resume(ctx, id); !errors.Is(err, agentrt.ErrRunState) {
			t.Errorf("resume of a completed run: %v, want ErrRunState", err)
		}
		if n := len(tool.args()); n != 2 {
			t.Errorf("tool ran %d times in all, want 2", n)
		}
	})

	t.Run("rejected ends the run", func(t *testing.T) {
		const id = "lk-ise-rejected"
		st, db, tool, step0 := crashAt(t, id, "tool.effect", agentrt.LocalMutation)
		d, a := takeOver(t, st, db, tool, lkNever(t), id, step0)
		if err := (agentrt.Operator{Store: st}).RejectShown(ctx, id, a.ID, a.Hash, "op", "it went through"); err != nil {
			t.Fatal(err)
		}
		if r := kit.MustRun(t, st, id); r.Status != agentrt.RunCancelled || r.Reason != agentrt.ReasonApprovalRejected {
			t.Errorf("run %s %s", r.Status, r.Reason)
		}
		if _, err := d.Resume(ctx, id); !errors.Is(err, agentrt.ErrRunState) {
			t.Errorf("resume of a rejected run: %v", err)
		}
		if n := len(tool.args()); n != 1 {
			t.Errorf("tool ran %d times, want 1", n)
		}
	})

	t.Run("tool started but never called", func(t *testing.T) {
		// The start is durable, so the runtime cannot know the tool did
		// not run: the operator decides.
		const id = "lk-ise-started"
		st, db, tool, step0 := crashAt(t, id, "step.tool_started", agentrt.LocalMutation)
		if n := len(tool.args()); n != 0 {
			t.Fatalf("tool ran %d times", n)
		}
		d, a := takeOver(t, st, db, tool, lkScript(t, lkCall("append", "{}"), lkComplete()), id, step0)
		if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, id, a.ID, a.Hash, "op", ""); err != nil {
			t.Fatal(err)
		}
		if run, err := d.Resume(ctx, id); err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("resume: %s, %v", run.Status, err)
		}
		if n := len(tool.args()); n != 1 {
			t.Errorf("tool ran %d times, want 1", n)
		}
	})

	t.Run("crash after the takeover still waits", func(t *testing.T) {
		const id = "lk-ise-twice"
		st, db, tool, step0 := crashAt(t, id, "tool.effect", agentrt.LocalMutation)
		d1 := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{tool}, LeaseTTL: ttl}, Agent: lkNever(t)}, db.later(t, 1, ttl))
		crashed := lkCrash(t, id, "step.interrupted", 0, st)
		done := lkGo(func() (agentrt.Run, error) { return d1.Resume(ctx, id) })
		select {
		case <-crashed:
		case out := <-done:
			t.Fatalf("first resume returned %s, %v without reaching step.interrupted", out.val.Status, out.err)
		case <-time.After(lkWait):
			t.Fatal("first resume did not crash")
		}
		st = db.open(t)
		if s := kit.MustSteps(t, st, id)[0]; s.Status != agentrt.StepInterrupted {
			t.Fatalf("step 0 is %s after the first takeover, want interrupted", s.Status)
		}
		// Within the first resumer's lease, the run is refused.
		early := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{tool}, LeaseTTL: ttl}, Agent: lkNever(t)}, lkLater(1, ttl))
		if _, err := early.Resume(ctx, id); !errors.Is(err, agentrt.ErrRunLeased) {
			t.Fatalf("resume within the first resumer's lease: %v, want ErrRunLeased", err)
		}
		d2 := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{tool}, LeaseTTL: ttl}, Agent: lkScript(t, lkCall("append", "{}"), lkComplete())}, db.later(t, 3, ttl))
		if run, err := d2.Resume(ctx, id); err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("second resume: %s, %v", run.Status, err)
		}
		a := requireOperatorPause(t, st, id, step0)
		if n := len(kit.EventsOf(t, st, id, agentrt.EventLeaseTakenOver)); n != 2 {
			t.Errorf("%d takeovers recorded, want 2", n)
		}
		if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, id, a.ID, a.Hash, "op", ""); err != nil {
			t.Fatal(err)
		}
		if run, err := d2.Resume(ctx, id); err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("resume after approval: %s, %v", run.Status, err)
		}
		if n := len(tool.args()); n != 2 {
			t.Errorf("tool ran %d times, want 2", n)
		}
	})

	for _, c := range []struct {
		name, point string
		se          agentrt.SideEffect
	}{
		{"read-only call continues", "tool.effect", agentrt.ReadOnly},
		{"deciding step continues", "step.decided", agentrt.LocalMutation},
		{"started step continues", "step.started", agentrt.LocalMutation},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "lk-ise-" + strings.ReplaceAll(c.name, " ", "-")
			st, db, tool, step0 := crashAt(t, id, c.point, c.se)
			ran := len(tool.args())
			var asked atomic.Int64
			script := lkScript(t, lkCall("append", "{}"), lkComplete())
			agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
				asked.Add(1)
				if in.Steps.Len() != 1 || in.Steps.At(0).ID != step0.ID || in.Steps.At(0).Status != agentrt.StepInterrupted {
					t.Errorf("the agent deciding anew sees steps %+v", in.Steps)
				}
				return script(ctx, in)
			})
			d := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{tool}, LeaseTTL: ttl}, Agent: agent}, db.later(t, 1, ttl))
			run, err := d.Resume(ctx, id)
			if err != nil || run.Status != agentrt.RunCompleted {
				t.Fatalf("resume: %s, %v", run.Status, err)
			}
			if asked.Load() != 1 {
				t.Errorf("agent asked %d times, want 1", asked.Load())
			}
			if apps := kit.MustApprovals(t, st, id); len(apps) != 0 {
				t.Errorf("%d approvals; nothing needed an operator", len(apps))
			}
			if n := len(tool.args()); n != ran {
				t.Errorf("tool ran %d more times on resume", n-ran)
			}
			resumed := kit.EventsOf(t, st, id, agentrt.EventRunResumed)
			if len(resumed) != 1 || !reflect.DeepEqual(kit.Payload(t, resumed[0]), map[string]any{"after": "interruption"}) {
				t.Errorf("run.resumed events %v", resumed)
			}
		})
	}
}
