package enginekit

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// BenchAgent is the benchmarks' scripted agent of N steps: N-1 calls to
// "echo" with distinct arguments, then complete. It allocates nothing per
// step beyond the arguments themselves.
type BenchAgent struct{ N int }

func (a BenchAgent) Decide(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	i := in.Steps.Len()
	if i >= a.N-1 {
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"done":true}`)}, nil
	}
	return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "echo", Args: json.RawMessage(fmt.Sprintf(`{"i":%d,"text":"step"}`, i))}, nil
}

// EchoTool is the benchmarks' read-only "echo" tool: it answers with its
// arguments, or with content when content is not nil.
func EchoTool(content json.RawMessage) agentrt.Tool {
	summary := "echo"
	if content != nil {
		summary = "rows"
	}
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "echo", Description: "Echo.", SideEffect: agentrt.ReadOnly, Timeout: time.Minute,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"text":{"type":"string"}},"required":["i"]}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			if content != nil {
				return agentrt.ToolResult{Content: content, Summary: summary}, nil
			}
			return agentrt.ToolResult{Content: c.Args, Summary: summary}, nil
		},
	}
}

// StartAll starts one run on each of drivers at once (a driver may be
// named more than once) and waits for them all; a run that fails to start
// or does not complete fails tb.
func StartAll(tb testing.TB, drivers []*agentrt.Driver, limits agentrt.Limits) {
	tb.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, len(drivers))
	for _, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := d.Start(ctx, "bench", limits)
			if err == nil && run.Status != agentrt.RunCompleted {
				err = fmt.Errorf("run ended %s: %s", run.Status, run.ReasonDetail)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// BenchRuns is a benchmark's timed loop: it starts a run on d b.N times,
// each of n steps, and reports ns/step (allocations too); a run that does
// not complete fails b.
func BenchRuns(b *testing.B, d *agentrt.Driver, limits agentrt.Limits, n int) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := d.Start(ctx, "bench", limits)
		if err != nil || r.Status != agentrt.RunCompleted {
			b.Fatalf("run: %v %s %s", err, r.Status, r.ReasonDetail)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
}

// BenchDriver is a driver of a BenchAgent of n steps on st, with tool as
// its echo under the default policy, and the limits that let its runs
// complete.
func BenchDriver(tb testing.TB, st agentrt.Store, tool agentrt.Tool, n int) (*agentrt.Driver, agentrt.Limits) {
	tb.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tool}},
		Agent:        BenchAgent{N: n},
	})
	if err != nil {
		tb.Fatal(err)
	}
	limits := agentrt.DefaultLimits()
	limits.MaxSteps = n + 1
	return d, limits
}

// BenchCommitFloor is the commit floor a durable step is measured
// against: b.N transactions on st of one event each, synced as st syncs
// every commit. Every backend's and adapter's floor runs this one body,
// so their figures compare.
func BenchCommitFloor(b *testing.B, st agentrt.Store) {
	b.Helper()
	ctx := context.Background()
	if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
		return tx.RunInsert(agentrt.Run{ID: "floor", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()})
	}); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: "floor", At: at, Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{}`)})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// SeedEvents writes a running run named runID holding n tool.finished
// events in one transaction: the chain the verification benchmarks read.
func SeedEvents(tb testing.TB, st agentrt.Store, runID string, n int) {
	tb.Helper()
	_, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: runID, Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()}); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if _, err := tx.EventAppend(agentrt.Event{RunID: runID, StepID: "s", At: time.Now(), Type: agentrt.EventToolFinished,
				Payload: json.RawMessage(fmt.Sprintf(`{"tool":"echo","duration_ms":%d,"summary":"ok"}`, i))}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}
