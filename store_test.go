package agentrt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// A step row whose decision will not decode is listed with DecodeError rather
// than failing the read; its run can still be read and cancelled; a driver
// resuming it, waiting or interrupted, fails it as internal_error rather than
// continuing from it, without rewriting the damaged row. A damaged approval
// cannot be decided, and its run can still be cancelled.
func TestStore_UndecodableRowsDoNotWedgeTheRun(t *testing.T) {
	ctx := context.Background()
	const damage = `{"kind":"tool_call","tool":"read","args":`
	// waiting leaves run-1 paused at step 1 after a read at step 0.
	waiting := func(t *testing.T, e *env) agentrt.Approval {
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		d := e.Driver(kit.Script(kit.Call("read", `{"path":"/a"}`), kit.Call("send", `{"path":"/b"}`)), agentrt.DefaultPolicy(), read, send)
		run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v", run.Status, err)
		}
		return kit.PendingApproval(t, e.store, "run-1")
	}
	corrupt := func(t *testing.T, e *env) string {
		id := kit.MustSteps(t, e.store, "run-1")[0].ID
		kit.Exec(t, rawDB(t, e.store), 1, `UPDATE steps SET decision_json = ? WHERE id = ?`, damage, id)
		return id
	}
	requireDamaged := func(t *testing.T, e *env, id string) {
		t.Helper()
		steps := kit.MustSteps(t, e.store, "run-1")
		if steps[0].ID != id || steps[0].DecodeError == "" || !strings.Contains(steps[0].DecodeError, "decision") || steps[0].Decision != nil {
			t.Fatalf("damaged step listed as %+v", steps[0])
		}
		if got := column(t, e.store, `SELECT decision_json FROM steps WHERE id = ?`, id); got != damage {
			t.Fatalf("the damaged row was rewritten to %q", got)
		}
	}

	t.Run("read and cancelled", func(t *testing.T) {
		e := newEnv(t)
		waiting(t, e)
		id := corrupt(t, e)
		requireDamaged(t, e, id)
		if steps, total, err := e.store.ListStepsPage(ctx, "run-1", 10, 0); err != nil || total != 2 || len(steps) != 2 || steps[0].DecodeError == "" {
			t.Fatalf("ListStepsPage = %+v, %d, %v", steps, total, err)
		}
		if run := kit.MustRun(t, e.store, "run-1"); run.Status != agentrt.RunWaiting || run.DecodeError != "" {
			t.Fatalf("run = %+v", run)
		}
		run, err := e.Operator().Cancel(ctx, "run-1", "op", "damaged")
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
		requireDamaged(t, e, id)
	})
	t.Run("resumed while waiting", func(t *testing.T) {
		e := newEnv(t)
		a := waiting(t, e)
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
			t.Fatalf("Approve: %v", err)
		}
		id := corrupt(t, e)
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		policy := kit.Recording(agentrt.DefaultPolicy())
		agent := kit.Script(kit.Complete(`{}`), kit.Complete(`{}`), kit.Complete(`{}`))
		run, err := e.Driver(agent, policy, read, send).Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
		if !strings.Contains(run.ReasonDetail, "will not decode") {
			t.Fatalf("detail = %q", run.ReasonDetail)
		}
		if send.N() != 0 || policy.N() != 0 || agent.N.Load() != 0 {
			t.Fatalf("after the damage: send ran %d, policy asked %d, agent asked %d times", send.N(), policy.N(), agent.N.Load())
		}
		requireDamaged(t, e, id)
		if st := kit.MustSteps(t, e.store, "run-1")[1]; st.Status != agentrt.StepFailed {
			t.Fatalf("the waiting step is %s", st.Status)
		}
		kit.RequireEvents(t, e.store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvPause, []kit.E{kit.ApprDecided, kit.StepFailed, kit.RunFinished})
	})
	t.Run("taken over after a crash", func(t *testing.T) {
		e := newEnv(t)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		agent := agentrt.AgentFunc(func(c context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if in.Steps.Len() == 0 {
				return kit.Call("read", `{"path":"/a"}`), nil
			}
			cancel() // the process gives up mid-decision
			return agentrt.Decision{}, c.Err()
		})
		if _, err := e.Driver(agent, agentrt.DefaultPolicy(), read).StartWithID(dctx, "run-1", "g", agentrt.DefaultLimits()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Start = %v", err)
		}
		id := corrupt(t, e)
		agent2 := kit.Script(kit.Complete(`{}`), kit.Complete(`{}`))
		run, err := e.Driver(agent2, agentrt.DefaultPolicy(), read).Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
		if agent2.N.Load() != 0 || read.N() != 1 {
			t.Fatalf("continued from a damaged record: agent asked %d, read ran %d times", agent2.N.Load(), read.N())
		}
		requireDamaged(t, e, id)
		kit.RequireEvents(t, e.store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepStarted, kit.StepInterrupt, kit.RunFinished})
	})
	t.Run("damaged approval", func(t *testing.T) {
		e := newEnv(t)
		a := waiting(t, e)
		kit.Exec(t, rawDB(t, e.store), 1, `UPDATE approvals SET capability_json = 'not json' WHERE id = ?`, a.ID)
		got, err := e.store.GetApproval(ctx, "run-1", a.ID)
		if err != nil || got.DecodeError == "" {
			t.Fatalf("GetApproval = %+v, %v", got, err)
		}
		if as := kit.MustApprovals(t, e.store, "run-1"); len(as) != 1 || as[0].DecodeError == "" {
			t.Fatalf("ListApprovals = %+v", as)
		}
		before := takeSnapshot(t, e.store)
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); !errors.Is(err, agentrt.ErrApprovalHash) {
			t.Fatalf("Approve of a damaged approval = %v, want ErrApprovalHash", err)
		}
		requireUnchanged(t, e.store, before, "a refused Approve")
		run, err := e.Operator().Cancel(ctx, "run-1", "op", "damaged")
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	})
	// A decision over a page's cap that is not JSON: the page read lists
	// the step by its size rather than failing on the JSON functions.
	t.Run("large decision that is not JSON", func(t *testing.T) {
		e := newEnv(t)
		waiting(t, e)
		id := kit.MustSteps(t, e.store, "run-1")[0].ID
		big := damage + strings.Repeat("x", 2*agentrt.MaxPageText)
		kit.Exec(t, rawDB(t, e.store), 1, `UPDATE steps SET decision_json = ? WHERE id = ?`, big, id)
		steps, total, err := e.store.ListStepsPage(ctx, "run-1", 10, 0)
		if err != nil || total != 2 || len(steps) != 2 {
			t.Fatalf("ListStepsPage = %d of %d, %v", len(steps), total, err)
		}
		if st := steps[0]; st.DecodeError == "" || !strings.Contains(st.DecodeError, "decision") || st.Decision != nil {
			t.Fatalf("damaged step listed as %+v", st)
		}
		if steps[1].DecodeError != "" || steps[1].Decision == nil {
			t.Fatalf("the sound step is listed as %+v", steps[1])
		}
		run, err := e.Operator().Cancel(ctx, "run-1", "op", "damaged")
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	})
	// Integer columns holding text, a fraction or a number past int64: the
	// row is read with DecodeError naming the column, the run can be
	// cancelled, and a driver fails it rather than continuing.
	for _, c := range []struct{ name, set string }{
		{"step_count text", `UPDATE runs SET step_count = 'abc' WHERE id = 'run-1'`},
		{"step_count huge text", `UPDATE runs SET step_count = printf('%.*c', 100000, 'n') WHERE id = 'run-1'`},
		{"generation fraction", `UPDATE runs SET generation = 1.5 WHERE id = 'run-1'`},
		{"input_tokens past int64", `UPDATE runs SET input_tokens = 1e300 WHERE id = 'run-1'`},
		{"step idx text", `UPDATE steps SET idx = 'x' WHERE run_id = 'run-1' AND idx = 0`},
	} {
		column := strings.Fields(c.name)[0]
		t.Run(c.name+" read and cancelled", func(t *testing.T) {
			e := newEnv(t)
			waiting(t, e)
			kit.Exec(t, rawDB(t, e.store), 1, c.set)
			if !damagedInteger(t, e.store, column) {
				t.Fatalf("no row names %s as damaged", column)
			}
			run, err := e.Operator().Cancel(ctx, "run-1", "op", "damaged")
			if err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
		})
		t.Run(c.name+" resumed", func(t *testing.T) {
			e := newEnv(t)
			a := waiting(t, e)
			if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
				t.Fatalf("Approve: %v", err)
			}
			kit.Exec(t, rawDB(t, e.store), 1, c.set)
			send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
			read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
			agent := kit.Script(kit.Complete(`{}`), kit.Complete(`{}`))
			run, err := e.Driver(agent, agentrt.DefaultPolicy(), read, send).Resume(ctx, "run-1")
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
			if !strings.Contains(run.ReasonDetail, "will not decode") || !strings.Contains(run.ReasonDetail, column) {
				t.Fatalf("detail = %q", run.ReasonDetail)
			}
			if send.N() != 0 || agent.N.Load() != 0 {
				t.Fatalf("after the damage: send ran %d, agent asked %d times", send.N(), agent.N.Load())
			}
		})
	}
}

// damagedInteger reports whether run-1 or one of its steps, read whole and
// by page, carries a DecodeError naming column.
func damagedInteger(t *testing.T, st agentrt.StoreReader, column string) bool {
	t.Helper()
	ctx := context.Background()
	run, err := st.GetRun(ctx, "run-1")
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	capped, err := st.GetRunCapped(ctx, "run-1")
	if err != nil {
		t.Fatalf("GetRunCapped: %v", err)
	}
	steps, err := st.ListSteps(ctx, "run-1")
	if err != nil {
		t.Fatalf("ListSteps: %v", err)
	}
	page, _, err := st.ListStepsPage(ctx, "run-1", 10, 0)
	if err != nil {
		t.Fatalf("ListStepsPage: %v", err)
	}
	if column == "step" {
		column = "idx"
	}
	whole, paged := strings.Contains(run.DecodeError, column), strings.Contains(capped.DecodeError, column)
	for _, s := range steps {
		whole = whole || strings.Contains(s.DecodeError, column)
	}
	for _, s := range page {
		paged = paged || strings.Contains(s.DecodeError, column)
	}
	if whole != paged {
		t.Fatalf("a full read says damaged %v, a page read %v", whole, paged)
	}
	return whole
}
