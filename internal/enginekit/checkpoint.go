package enginekit

import (
	"context"
	"slices"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
)

// BenchCheckpointLag is a benchmark's loop of runs, 16 at a time, of
// steps steps on st, with the integrator a process runs in the
// background (interval 250 ms), or with every commit waiting for its
// fold when sync is set. It waits until every event is folded, then
// reports each event's lag from its time to the time of the checkpoint
// that folded it (lag-p50-ms, lag-p99-ms, lag-max-ms) and ns/step.
func BenchCheckpointLag(b *testing.B, st agentrt.Store, steps int, sync bool) {
	b.Helper()
	ctx := context.Background()
	r, err := checkpoint.Process{Sync: sync}.Start(st, func(err error) { b.Error(err) })
	if err != nil || r == nil {
		b.Fatalf("Start: %v %v", r, err)
	}
	defer r.Stop()
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{EchoTool(nil)},
			AwaitCheckpoint: r.EngineAwait()},
		Agent: BenchAgent{N: steps},
	})
	if err != nil {
		b.Fatal(err)
	}
	limits := agentrt.DefaultLimits()
	limits.MaxSteps = steps + 1
	drivers := make([]*agentrt.Driver, 16)
	for i := range drivers {
		drivers[i] = d
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		StartAll(b, drivers, limits)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16*steps), "ns/step")
	cs, _ := checkpoint.For(st)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		n, _, err := cs.CheckpointUnfolded(ctx, time.Now().Add(time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d events still unfolded a minute after the load", n)
		}
	}
	lags := foldLags(b, st, cs)
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "lag-p50-ms")
	b.ReportMetric(q(0.99), "lag-p99-ms")
	b.ReportMetric(q(1), "lag-max-ms")
}

// foldLags is, for every folded event, the time from the event's own
// time to that of the first checkpoint holding its leaf.
func foldLags(b *testing.B, st agentrt.Store, cs checkpoint.Store) []time.Duration {
	b.Helper()
	ctx := context.Background()
	var cps []checkpoint.Checkpoint
	for after := int64(0); ; {
		page, err := cs.CheckpointList(ctx, after, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		cps = append(cps, page...)
		after = page[len(page)-1].Size
	}
	at := map[int64]time.Time{} // seq: the event's time
	runs, err := st.ListRuns(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, run := range runs {
		evs, err := st.ListEvents(ctx, run.ID)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range evs {
			at[e.Seq] = e.At
		}
	}
	var lags []time.Duration
	for from := int64(0); ; {
		leaves, err := cs.CheckpointLeaves(ctx, from, 4096)
		if err != nil {
			b.Fatal(err)
		}
		if len(leaves) == 0 {
			break
		}
		for _, l := range leaves {
			i, _ := slices.BinarySearchFunc(cps, l.Index+1, func(c checkpoint.Checkpoint, size int64) int { return int(c.Size - size) })
			lags = append(lags, cps[i].At.Sub(at[l.Seq]))
		}
		from = leaves[len(leaves)-1].Index + 1
	}
	return lags
}
