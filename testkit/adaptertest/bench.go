package adaptertest

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// CountingStore is a SQLite store that counts the synced commits a gate
// makes: its transactions (Update) and its queued writes (Enqueue, with
// which a gate opens a step).
type CountingStore struct {
	*sqlite.Store
	commits atomic.Int64
}

// OpenCounting opens a CountingStore on a fresh file in tb's temporary
// directory, closed when tb ends.
func OpenCounting(tb testing.TB) *CountingStore {
	tb.Helper()
	st, err := sqlite.Open(filepath.Join(tb.TempDir(), "runs.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return &CountingStore{Store: st}
}

// Commits is the number of commits so far.
func (c *CountingStore) Commits() int64 { return c.commits.Load() }

func (c *CountingStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	c.commits.Add(1)
	return c.Store.Update(ctx, fn)
}

func (c *CountingStore) Enqueue(fn func(agentrt.Tx) error) func() ([]agentrt.Event, error) {
	c.commits.Add(1)
	return c.Store.Enqueue(fn)
}

// BenchGate is a gate over st for benchmarks: the default policy, the
// tools, and limits no benchmark reaches.
func BenchGate(b *testing.B, st agentrt.Store, tools []agentrt.Tool) (*agentrt.Gate, agentrt.Limits) {
	b.Helper()
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: tools}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Close)
	limits := agentrt.FrameworkLimits()
	limits.MaxSteps = 1 << 30
	return g, limits
}

// ReportCommits reports the commits made since before, per call.
func ReportCommits(b *testing.B, c *CountingStore, before int64, calls int) {
	b.ReportMetric(float64(c.Commits()-before)/float64(b.N*calls), "commits/call")
}

// CommitFloor is a benchmark of one synced single-event transaction on a
// fresh SQLite file with the store's own pragmas, as the root's
// BenchmarkCommitFloor measures it: run it beside an adapter's benchmark
// to read that adapter's overhead in commits.
func CommitFloor(b *testing.B) { enginekit.BenchCommitFloor(b, OpenCounting(b)) }
