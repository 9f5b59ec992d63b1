package enginekit

import (
	"context"
	"sync/atomic"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// CountingStore wraps a store and counts the write transactions it is
// handed: its transactions (Update) and its queued writes (Enqueue, with
// which a gate opens a step). The engine suite, the proxy's tests and the
// adapters' benchmarks read their commits per call from it.
type CountingStore struct {
	agentrt.Store
	q       agentrt.Enqueuer
	commits atomic.Int64
}

// Counting wraps st, which must queue writes (agentrt.Enqueuer), in a new
// CountingStore.
func Counting(tb testing.TB, st agentrt.Store) *CountingStore {
	tb.Helper()
	return new(CountingStore).Wrap(tb, st)
}

// Wrap makes c write through st from now on, keeping its count, and
// returns c: a test that builds its gates later hands each store to the
// same counter. st must queue writes (agentrt.Enqueuer).
func (c *CountingStore) Wrap(tb testing.TB, st agentrt.Store) *CountingStore {
	tb.Helper()
	q, ok := st.(agentrt.Enqueuer)
	if !ok {
		tb.Fatalf("the store %T queues no writes (agentrt.Enqueuer)", st)
	}
	c.Store, c.q = st, q
	return c
}

// Commits is the number of commits so far.
func (c *CountingStore) Commits() int64 { return c.commits.Load() }

func (c *CountingStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	c.commits.Add(1)
	return c.Store.Update(ctx, fn)
}

func (c *CountingStore) Enqueue(fn func(agentrt.Tx) error) func() ([]agentrt.Event, error) {
	c.commits.Add(1)
	return c.q.Enqueue(fn)
}
