package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// benchGateSession is a session of one begun run on a fresh SQLite file,
// with the read-only echo tool allowed by the default policy and no step
// limit in reach.
func benchGateSession(b *testing.B) (*agentrt.GateSession, *sqlite.Store) {
	st := benchStore(b)
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{echoTool(false)}}})
	if err != nil {
		b.Fatal(err)
	}
	limits := agentrt.FrameworkLimits()
	limits.MaxSteps = 1 << 30
	gs, err := g.Begin(context.Background(), "bench", "bench", limits)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(gs.Close)
	return gs, st
}

// benchCall is one allowed call through the session: step, propose,
// execute, with arguments distinct per call (no loop detected).
func benchCall(ctx context.Context, gs *agentrt.GateSession, i int) error {
	o, err := gs.Step(ctx)
	if err != nil || o == nil {
		return fmt.Errorf("step: %v (nil step: %t)", err, o == nil)
	}
	v, err := o.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "echo", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		return fmt.Errorf("propose: %v %s", err, v.Outcome)
	}
	if _, err := o.Execute(ctx); err != nil {
		return fmt.Errorf("execute: %v", err)
	}
	return nil
}

// BenchmarkGate_ParallelSiblings: a turn of 8 allowed calls of one run
// made from 8 goroutines at once against the same 8 made one after
// another (ns/op is per turn), and the commit floor on the same driver in
// the same run. calls/s and commits/call (physical, synced commits) are
// the figures to compare.
func BenchmarkGate_ParallelSiblings(b *testing.B) {
	const calls = 8
	turns := func(b *testing.B, parallel bool) {
		gs, st := benchGateSession(b)
		ctx := context.Background()
		before := st.Stats()
		n := 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if !parallel {
				for k := 0; k < calls; k++ {
					if err := benchCall(ctx, gs, n); err != nil {
						b.Fatal(err)
					}
					n++
				}
				continue
			}
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for k := 0; k < calls; k++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					errs <- benchCall(ctx, gs, i)
				}(n)
				n++
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		after := st.Stats()
		b.ReportMetric(float64(b.N*calls)/b.Elapsed().Seconds(), "calls/s")
		b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N*calls), "commits/call")
		b.ReportMetric(float64(after.Updates-before.Updates)/float64(b.N*calls), "updates/call")
	}
	b.Run("floor", func(b *testing.B) { kit.BenchCommitFloor(b, benchStore(b)) })

	b.Run("turn8/sequential", func(b *testing.B) { turns(b, false) })
	b.Run("turn8/parallel", func(b *testing.B) { turns(b, true) })
}
