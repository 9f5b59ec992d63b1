package adaptertest

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// CountingStore is a store that counts the synced commits a gate makes:
// its transactions (Update) and its queued writes (Enqueue, with which a
// gate opens a step). It is the engine suite's counter, named here for
// the adapters' modules.
type CountingStore = enginekit.CountingStore

// OpenCounting opens a CountingStore on a fresh SQLite file in tb's
// temporary directory, closed when tb ends.
func OpenCounting(tb testing.TB) *CountingStore {
	tb.Helper()
	st, err := sqlite.Open(filepath.Join(tb.TempDir(), "runs.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return enginekit.Counting(tb, st)
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
func CommitFloor(b *testing.B) {
	enginekit.CommitFloor(b, OpenCounting(b))
}
