package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// pipelineRun inserts a running run with one started step.
func pipelineRun(t *testing.T, s agentrt.Store, id string) {
	t.Helper()
	at := time.Now()
	if _, err := s.Update(context.Background(), func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: id, Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: at}); err != nil {
			return err
		}
		return tx.StepInsert(agentrt.Step{ID: id + "-s0", RunID: id, Index: 0, Status: agentrt.StepExecuting, StartedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
}

// A write transaction's statements reach Postgres together, so a
// compare-and-set that matches no row is known only after the fn went on.
// The fn must still see the failure where it made the write: the store
// runs the transaction again one statement at a time, and what commits is
// what the fn did knowing the failure, here its fallback.
func TestPipeline_AFnSeesAFailedWriteWhereItMadeIt(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Fresh(t))
	defer s.Close()
	pipelineRun(t, s, "r1")
	var attempts int
	var seen error
	evs, err := s.Update(ctx, func(tx agentrt.Tx) error {
		attempts++
		// The run is running, not enqueued: this matches no row.
		seen = tx.RunUpdate(agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunEnqueued}, Status: agentrt.RunRunning})
		typ := agentrt.EventRunStarted
		if errors.Is(seen, agentrt.ErrRunState) {
			typ = agentrt.EventRunFinished // the fallback: only the failure leads here
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: time.Now(), Type: typ, Payload: json.RawMessage(`{}`)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(seen, agentrt.ErrRunState) {
		t.Fatalf("the committed attempt saw %v from a compare-and-set that matched nothing, want ErrRunState", seen)
	}
	if len(evs) != 1 || evs[0].Type != agentrt.EventRunFinished {
		t.Fatalf("committed %v, want the fallback's one %s event", evs, agentrt.EventRunFinished)
	}
	stored, err := s.ListEvents(ctx, "r1")
	if err != nil || len(stored) != 1 || stored[0].Type != agentrt.EventRunFinished {
		t.Fatalf("stored %v (%v), want only the fallback's event", stored, err)
	}
	t.Logf("%d attempts", attempts)
}

// A failed write the fn returns fails the Update with that write's error,
// and none of the fn's writes, before or after it, is kept. A duplicate
// insert's constraint violation is the same ErrRunState as unpipelined.
func TestPipeline_AFailedWriteKeepsNothing(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Fresh(t))
	defer s.Close()
	pipelineRun(t, s, "r1")
	_, err := s.Update(ctx, func(tx agentrt.Tx) error {
		if err := tx.StepUpdate(agentrt.StepUpdate{ID: "r1-s0", From: []agentrt.StepStatus{agentrt.StepExecuting}, Status: agentrt.StepDone}); err != nil {
			return err
		}
		if _, err := tx.EventAppend(agentrt.Event{RunID: "r1", StepID: "r1-s0", At: time.Now(), Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		return tx.StepInsert(agentrt.Step{ID: "r1-s0", RunID: "r1", Index: 0, Status: agentrt.StepExecuting, StartedAt: time.Now()})
	})
	if !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a duplicate step insert = %v, want ErrRunState", err)
	}
	steps, err := s.ListSteps(ctx, "r1")
	if err != nil || len(steps) != 1 || steps[0].Status != agentrt.StepExecuting {
		t.Fatalf("steps %v (%v): the step update before the failed insert was kept", steps, err)
	}
	if evs, err := s.ListEvents(ctx, "r1"); err != nil || len(evs) != 0 {
		t.Fatalf("events %v (%v): an event of the failed transaction was kept", evs, err)
	}
	if seq, _, err := s.ChainHead(ctx); err != nil || seq != 0 {
		t.Fatalf("chain head %d (%v) after a failed transaction, want 0", seq, err)
	}
}

// A read inside the transaction sees the writes the fn made before it,
// though they were not yet sent when the fn made them.
func TestPipeline_AReadSeesTheWritesBeforeIt(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Fresh(t))
	defer s.Close()
	pipelineRun(t, s, "r1")
	if _, err := s.Update(ctx, func(tx agentrt.Tx) error {
		if err := tx.RunUpdate(agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunRunning}, Status: agentrt.RunCompleted, IncStepCount: true}); err != nil {
			return err
		}
		if err := tx.StepInsert(agentrt.Step{ID: "r1-s1", RunID: "r1", Index: 1, Status: agentrt.StepExecuting, StartedAt: time.Now()}); err != nil {
			return err
		}
		r, err := tx.RunGet("r1")
		if err != nil {
			return err
		}
		if r.Status != agentrt.RunCompleted || r.StepCount != 1 {
			t.Errorf("inside the transaction the run reads %s with %d steps, want its own update", r.Status, r.StepCount)
		}
		steps, err := tx.StepList("r1")
		if err != nil {
			return err
		}
		if len(steps) != 2 {
			t.Errorf("inside the transaction %d steps, want the inserted one too", len(steps))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Concurrent Updates share a pipelined transaction; one whose write fails
// loses its writes, and every other commits.
func TestPipeline_OneFailedWriteInASharedBatchLosesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Fresh(t))
	defer s.Close()
	const n = 16
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "r" + string(rune('a'+i))
		pipelineRun(t, s, ids[i])
	}
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range ids {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, errs[i] = s.Update(ctx, func(tx agentrt.Tx) error {
					if _, err := tx.EventAppend(agentrt.Event{RunID: ids[i], At: time.Now(), Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{}`)}); err != nil {
						return err
					}
					from := agentrt.RunRunning
					if i == round%n {
						from = agentrt.RunEnqueued // matches nothing
					}
					return tx.RunUpdate(agentrt.RunUpdate{ID: ids[i], From: []agentrt.RunStatus{from}, IncStepCount: true})
				})
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if (i == round%n) != errors.Is(err, agentrt.ErrRunState) {
				t.Fatalf("round %d: Update %d = %v", round, i, err)
			}
		}
	}
	var total int
	for i, id := range ids {
		r, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.ListEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// Each run failed in rounds i and i+16 (of 20) where those exist.
		want := 20 - (20-i+n-1)/n
		if r.StepCount != want || len(evs) != want {
			t.Fatalf("run %s: %d step increments and %d events, want %d of each", id, r.StepCount, len(evs), want)
		}
		total += want
	}
	if rep, err := s.VerifyEvents(ctx, 0, 0); err != nil || rep.Break != nil {
		t.Fatalf("verify %+v (%v)", rep, err)
	}
	t.Logf("%d events over %d commits", total, s.Stats().Commits)
}
