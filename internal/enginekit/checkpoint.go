package enginekit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"golang.org/x/mod/sumdb/note"
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
	cps := allPages(b, func(after int64) ([]checkpoint.Checkpoint, error) { return cs.CheckpointList(ctx, after, 1000) },
		func(c checkpoint.Checkpoint) int64 { return c.Size })
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
	leaves := allPages(b, func(from int64) ([]checkpoint.Leaf, error) { return cs.CheckpointLeaves(ctx, from, 4096) },
		func(l checkpoint.Leaf) int64 { return l.Index + 1 })
	var lags []time.Duration
	for _, l := range leaves {
		i, _ := slices.BinarySearchFunc(cps, l.Index+1, func(c checkpoint.Checkpoint, size int64) int { return int(c.Size - size) })
		lags = append(lags, cps[i].At.Sub(at[l.Seq]))
	}
	return lags
}

// allPages reads every page fetch returns, the first from 0 and each
// next from where next says the last page's final item leaves off, until
// a page is empty.
func allPages[T any](tb testing.TB, fetch func(from int64) ([]T, error), next func(T) int64) []T {
	tb.Helper()
	var all []T
	for from := int64(0); ; {
		page, err := fetch(from)
		if err != nil {
			tb.Fatal(err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		from = next(page[len(page)-1])
	}
}

// FillRun writes, in one transaction, a running run id and n events of
// it: event i is ev(i) with its RunID set, or a bare run.created event at
// time.Now() when ev is nil. For tests and benchmarks that need a long
// log fast.
func FillRun(tb testing.TB, st agentrt.Store, id string, n int, ev func(i int) agentrt.Event) {
	tb.Helper()
	if ev == nil {
		ev = func(int) agentrt.Event { return agentrt.Event{At: time.Now(), Type: agentrt.EventRunCreated} }
	}
	if _, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: id, Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()}); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			e := ev(i)
			e.RunID = id
			if _, err := tx.EventAppend(e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
}

// ToolFinishedEvent is the i-th tool.finished event of step s, as the verify
// benchmarks fill their logs with.
func ToolFinishedEvent(i int) agentrt.Event {
	return agentrt.Event{StepID: "s", At: time.Now(), Type: agentrt.EventToolFinished,
		Payload: json.RawMessage(fmt.Sprintf(`{"tool":"echo","duration_ms":%d,"summary":"ok"}`, i))}
}

// AppendEvents appends n events to run id (created running on first use),
// each in a transaction of its own, as concurrent writers commit them. It
// may run in a goroutine of its own: a failure is reported with t.Error
// and ends the writing.
func AppendEvents(t testing.TB, st agentrt.Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.GetRun(ctx, id); err != nil {
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
			return tx.RunInsert(agentrt.Run{ID: id, Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()})
		}); err != nil {
			t.Error(err)
			return
		}
	}
	for i := 0; i < n; i++ {
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: id, At: time.Now(), Type: agentrt.EventRunCreated, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
			return err
		}); err != nil {
			t.Error(err)
			return
		}
	}
}

// FoldAll folds with in until every event of st is folded. On PostgreSQL
// the fold's watermark is the cluster's oldest running transaction, and
// other tests' databases share the cluster, so one Fold may stop short of
// events this test committed; it must not stop short forever. It returns
// how many events the folds folded in all.
func FoldAll(t testing.TB, st agentrt.Store, in *checkpoint.Integrator) int {
	t.Helper()
	ctx := context.Background()
	cs, err := checkpoint.For(st)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		n, _, _, err := in.Fold(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		unfolded, _, err := cs.CheckpointUnfolded(ctx, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if unfolded == 0 {
			return total
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events still unfolded after a minute of folding", unfolded)
		}
	}
}

// SignedReceipt folds every event of st into a log signed with a fresh key
// named name and returns the receipt of run's events with the verifier
// parsed from the key's public text alone, as an offline checker holds it.
func SignedReceipt(t testing.TB, st agentrt.Store, name, run string) (checkpoint.Receipt, note.Verifier) {
	t.Helper()
	ctx := context.Background()
	cs, err := checkpoint.For(st)
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := checkpoint.NewKey(name)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	in, err := checkpoint.NewIntegrator(cs, checkpoint.Config{Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	FoldAll(t, st, in)
	events, err := st.ListEvents(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := checkpoint.MakeReceipt(ctx, cs, run, events)
	if err != nil {
		t.Fatal(err)
	}
	v, err := checkpoint.ParseVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return rc, v
}
