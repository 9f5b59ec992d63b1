package enginekit

import (
	"context"
	"sync/atomic"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// Counting is a store that counts the write transactions it is handed,
// queued (Enqueue, with which a gate opens a step) or not (Update),
// whether or not they commit. The engine suite and the adapters'
// benchmarks read a gate's commits per call from it.
type Counting struct {
	agentrt.Store
	q agentrt.Enqueuer
	n atomic.Int64
}

// Count wraps st, which must queue writes (agentrt.Enqueuer): one that
// does not fails tb, since a gate over it would commit differently.
func Count(tb testing.TB, st agentrt.Store) *Counting {
	tb.Helper()
	q, ok := st.(agentrt.Enqueuer)
	if !ok {
		tb.Fatal("the backend's store queues no writes (agentrt.Enqueuer)")
	}
	return &Counting{Store: st, q: q}
}

// Commits is the number of write transactions handed over so far.
func (c *Counting) Commits() int64 { return c.n.Load() }

func (c *Counting) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	c.n.Add(1)
	return c.Store.Update(ctx, fn)
}

func (c *Counting) Enqueue(fn func(agentrt.Tx) error) func() ([]agentrt.Event, error) {
	c.n.Add(1)
	return c.q.Enqueue(fn)
}
