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

// benchTurns times b.N turns of n calls (call(i), i counting up from 0
// across turns), made one after another or from n goroutines at once,
// reports calls/s and stops the timer; the first error fails b.
func benchTurns(b *testing.B, n int, parallel bool, call func(i int) error) {
	b.Helper()
	k := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			if !parallel {
				errs <- call(k)
			} else {
				wg.Add(1)
				go func(i int) { defer wg.Done(); errs <- call(i) }(k)
			}
			k++
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
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "calls/s")
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
		benchTurns(b, calls, parallel, func(i int) error { return benchCall(ctx, gs, i) })
		after := st.Stats()
		b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N*calls), "commits/call")
		b.ReportMetric(float64(after.Updates-before.Updates)/float64(b.N*calls), "updates/call")
	}
	b.Run("floor", func(b *testing.B) { kit.CommitFloor(b, benchStore(b)) })
	b.Run("turn8/sequential", func(b *testing.B) { turns(b, false) })
	b.Run("turn8/parallel", func(b *testing.B) { turns(b, true) })
}

// BenchmarkGate_Call is Gate.Call, the adapters' path, on the read-only
// echo registered by spec only: "direct" is the body called alone,
// "call" one allowed call through the gate, "floor" the commit floor on
// the same driver, and a turn of 8 allowed calls of one run made from 8
// goroutines at once against the same 8 made one after another (ns/op is
// per turn). syncs/call counts the store's physical (synced) commits.
func BenchmarkGate_Call(b *testing.B) {
	body := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
	calls := func(b *testing.B, n int, parallel bool) {
		st := benchStore(b)
		spec := echoTool(false).Spec()
		g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
			Tools: []agentrt.Tool{agentrt.SpecOnly(spec)}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(g.Close)
		limits := agentrt.FrameworkLimits()
		limits.MaxSteps = 1 << 30
		ctx := context.Background()
		call := func(i int) error {
			_, err := g.Call(ctx, agentrt.Call{RunID: "bench", Limits: limits, CallID: fmt.Sprintf("c%d", i), Tool: "echo",
				Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Body: body})
			return err
		}
		if err := call(-1); err != nil { // the run begins outside the timed loop
			b.Fatal(err)
		}
		before := st.Stats()
		benchTurns(b, n, parallel, call)
		after := st.Stats()
		b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N*n), "syncs/call")
		b.ReportMetric(float64(after.Updates-before.Updates)/float64(b.N*n), "commits/call")
	}
	b.Run("direct", func(b *testing.B) {
		for i := range b.N {
			if _, err := body(context.Background(), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("call", func(b *testing.B) { calls(b, 1, false) })
	b.Run("floor", func(b *testing.B) { BenchmarkCommitFloor(b) })
	b.Run("turn8/sequential", func(b *testing.B) { calls(b, 8, false) })
	b.Run("turn8/parallel", func(b *testing.B) { calls(b, 8, true) })
}
