package enginetest

import (
	"context"
	"errors"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// openStore opens a store on a fresh database of the backend.
func openStore(t testing.TB, b *Backend) agentrt.Store {
	t.Helper()
	return b.fresh(t).open(t)
}

// env is one test's database, store, clock and observer.
type env struct {
	*kit.Env
	db *database
}

func newEnv(t testing.TB, b *Backend) *env {
	d := b.fresh(t)
	return &env{Env: kit.NewEnv(t, d.open(t)), db: d}
}

// approve grants a, as shown, by "op" with note; a refusal fails the test.
func (e *env) approve(t testing.TB, a agentrt.Approval, note string) {
	t.Helper()
	if err := e.Operator().ApproveShown(context.Background(), a.RunID, a.ID, a.Hash, "op", note); err != nil {
		t.Fatalf("Approve %s: %v", a.ID, err)
	}
}

// requireUndecided requires both decisions on a, as shown, by by to fail
// with want and to change nothing in the database; what names the case.
func (e *env) requireUndecided(t testing.TB, a agentrt.Approval, by string, want error, what string) {
	t.Helper()
	ctx := context.Background()
	before := e.db.snapshot(t)
	op := e.Operator()
	if err := op.ApproveShown(ctx, a.RunID, a.ID, a.Hash, by, ""); !errors.Is(err, want) {
		t.Fatalf("ApproveShown %s = %v, want %v", what, err, want)
	}
	if err := op.RejectShown(ctx, a.RunID, a.ID, a.Hash, by, ""); !errors.Is(err, want) {
		t.Fatalf("RejectShown %s = %v, want %v", what, err, want)
	}
	e.db.requireUnchanged(t, before, what)
}

// startPaused starts runID with d and limits and requires it to pause on
// an approval.
func startPaused(t testing.TB, d *agentrt.Driver, runID string, limits agentrt.Limits) agentrt.Run {
	t.Helper()
	run, err := d.StartWithID(context.Background(), runID, "g", limits)
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s %s %q, %v; want a pause", run.Status, run.Reason, run.ReasonDetail, err)
	}
	return run
}

// resumeCompletes resumes runID with d and requires the run to complete
// its goal.
func resumeCompletes(t testing.TB, d *agentrt.Driver, runID string) agentrt.Run {
	t.Helper()
	run, err := d.Resume(context.Background(), runID)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	return run
}

// resumePauses resumes runID with d and requires it to pause on an
// approval again; what names the resume in the failure.
func resumePauses(t testing.TB, d *agentrt.Driver, runID, what string) agentrt.Run {
	t.Helper()
	run, err := d.Resume(context.Background(), runID)
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("%s = %s, %v; want a pause", what, run.Status, err)
	}
	return run
}

// startEnds starts "run-1" with d and limits and requires the run to end
// with status and reason before Start returns.
func startEnds(t testing.TB, d *agentrt.Driver, limits agentrt.Limits, status agentrt.RunStatus, reason agentrt.TerminalReason) agentrt.Run {
	t.Helper()
	run, err := d.StartWithID(context.Background(), "run-1", "g", limits)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	kit.RequireEnded(t, run, status, reason)
	return run
}
