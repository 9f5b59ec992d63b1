package adaptertest

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// CountingStore is a SQLite store that counts the synced commits a gate
// makes: its transactions (Update) and its queued writes (Enqueue, with
// which a gate opens a step). Commits is their number so far.
type CountingStore struct {
	*enginekit.Counting
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
	return &CountingStore{enginekit.Count(tb, st)}
}

// Governed is a governed benchmark's side of the gate: the store it
// counts commits on, the gate, the classes its one tool has, and limits
// no benchmark reaches.
type Governed struct {
	Store   *CountingStore
	Gate    *agentrt.Gate
	Classes map[string]agentrt.SideEffect
	Limits  agentrt.Limits
}

// GovernRead opens a CountingStore and a gate over it with the default
// policy for one tool, named tool and classed a read; specs derives the
// framework's tool specs from those classes. The gate closes when b ends.
func GovernRead(b *testing.B, tool string, specs func(classes map[string]agentrt.SideEffect) ([]agentrt.Tool, error)) *Governed {
	b.Helper()
	g := &Governed{Store: OpenCounting(b), Classes: map[string]agentrt.SideEffect{tool: agentrt.ReadOnly}}
	tools, err := specs(g.Classes)
	if err != nil {
		b.Fatal(err)
	}
	if g.Gate, err = agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: g.Store, Policy: agentrt.DefaultPolicy(), Tools: tools}}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Gate.Close)
	g.Limits = agentrt.FrameworkLimits()
	g.Limits.MaxSteps = 1 << 30
	return g
}

// Turns is an adapter benchmark's loop: turn runs once untimed (the run
// begins there), then b.N times timed. With st (a governed benchmark; nil
// for a direct one) it reports the timed turns' commits per call, each
// turn making calls calls.
func Turns(b *testing.B, st *CountingStore, calls int, turn func()) {
	b.Helper()
	turn()
	var before int64
	if st != nil {
		before = st.Commits()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		turn()
	}
	b.StopTimer()
	if st != nil {
		b.ReportMetric(float64(st.Commits()-before)/float64(b.N*calls), "commits/call")
	}
}

// CommitFloor is a benchmark of one synced single-event transaction on a
// fresh SQLite file with the store's own pragmas, as the root's
// BenchmarkCommitFloor measures it: run it beside an adapter's benchmark
// to read that adapter's overhead in commits.
func CommitFloor(b *testing.B) {
	enginekit.CommitFloor(b, OpenCounting(b))
}
