package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// newDB creates a runs database in a fresh directory and returns the
// writer's store and the path.
func newDB(t testing.TB) (*sqlite.Store, string) { return testrig.DB(t) }

// openRO opens path read-only, as a follower should.
func openRO(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.OpenExisting(path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// addRun inserts a run with its run.created event.
func addRun(t testing.TB, st agentrt.Store, id string) {
	t.Helper()
	_, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: id, Goal: "goal " + id, Status: agentrt.RunRunning,
			Limits: agentrt.DefaultLimits(), CreatedAt: t0, StartedAt: t0}); err != nil {
			return err
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: id, At: t0, Type: agentrt.EventRunCreated, Payload: json.RawMessage(`{"goal":"goal"}`)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// addEvents appends n events to run, one transaction each.
func addEvents(t testing.TB, st agentrt.Store, run string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: run, StepID: "s", At: t0.Add(time.Duration(i) * time.Second),
				Type: agentrt.EventStepStarted, Payload: json.RawMessage(fmt.Sprintf(`{"index":%d}`, i))})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// collector is a sink that keeps what it was given.
type collector struct {
	mu   sync.Mutex
	seqs []int64
	evs  []agentrt.Event
}

func (c *collector) sink(e agentrt.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seqs = append(c.seqs, e.Seq)
	c.evs = append(c.evs, e)
	return nil
}

func (c *collector) got() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.seqs...)
}

// span returns a..b inclusive.
func span(a, b int64) []int64 {
	var out []int64
	for s := a; s <= b; s++ {
		out = append(out, s)
	}
	return out
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
