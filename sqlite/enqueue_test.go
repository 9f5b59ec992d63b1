package sqlite_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Two writes queued one after another, the second depending on the first
// (a compare-and-set on the count the first sets), are applied in queue
// order even when the second's wait is the one that drives the writer:
// both commit, in one commit, and their events are in queue order.
func TestStore_EnqueuedWritesApplyInQueueOrder(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	if _, err := s.Update(ctx, func(tx agentrt.Tx) error {
		return tx.RunInsert(agentrt.Run{ID: "r", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	var q agentrt.Enqueuer = s
	step := func(n int) func(tx agentrt.Tx) error {
		return func(tx agentrt.Tx) error {
			if err := tx.RunUpdate(agentrt.RunUpdate{ID: "r", From: []agentrt.RunStatus{agentrt.RunRunning},
				CheckStepCount: true, StepCount: n, IncStepCount: true}); err != nil {
				return err
			}
			_, err := tx.EventAppend(agentrt.Event{RunID: "r", At: now, Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{"index":` + strconv.Itoa(n) + `}`)})
			return err
		}
	}
	before := s.Stats()
	first := q.Enqueue(step(0))
	second := q.Enqueue(step(1))
	if _, err := second(); err != nil {
		t.Fatalf("the second write: %v", err)
	}
	if _, err := first(); err != nil {
		t.Fatalf("the first write: %v", err)
	}
	if got := s.Stats().Commits - before.Commits; got != 1 {
		t.Fatalf("%d commits, want the two writes in one", got)
	}
	run, err := s.GetRun(ctx, "r")
	if err != nil || run.StepCount != 2 {
		t.Fatalf("run: %d steps, %v; want 2", run.StepCount, err)
	}
	evs, err := s.ListEvents(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || string(evs[0].Payload) != `{"index":0}` || string(evs[1].Payload) != `{"index":1}` {
		t.Fatalf("events %v, want index 0 then 1", evs)
	}
}
