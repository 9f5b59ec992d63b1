package postgres_test

import (
	"context"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// SECURITY.md's claim about synchronous mode on PostgreSQL: a transaction
// left open (it took its id before the run began) holds the watermark, so
// a synchronous run does not return while it is open, however long the
// integrator is given; once it ends, the run returns with every event
// folded.
func TestProcess_PostgresSyncWaitsForAnOlderOpenTransaction(t *testing.T) {
	st := open(t, pgtest.Fresh(t))
	defer st.Close()
	ctx := context.Background()
	older, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback(ctx)
	if _, err := older.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	r, err := checkpoint.Process{Interval: 10 * time.Millisecond, Sync: true}.Start(st, func(err error) { t.Error(err) })
	if err != nil || r == nil {
		t.Fatalf("Start: %v %v", r, err)
	}
	defer r.Stop()
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{enginekit.EchoTool(nil)},
			AwaitCheckpoint: r.EngineAwait()},
		Agent: enginekit.BenchAgent{N: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		run agentrt.Run
		err error
	}
	done := make(chan result, 1)
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go func() {
		run, err := d.Start(runCtx, "sync behind an open transaction", agentrt.DefaultLimits())
		done <- result{run, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("the synchronous run returned (%s, %v) while an older transaction was open", res.run.Status, res.err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := older.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.run.Status != agentrt.RunCompleted {
		t.Fatalf("run after the transaction ended: %s %v", res.run.Status, res.err)
	}
	evs, err := st.ListEvents(ctx, res.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	leaves, err := st.CheckpointLeavesOf(ctx, res.run.ID, evs[0].Seq, evs[len(evs)-1].Seq)
	if err != nil || len(leaves) != len(evs) {
		t.Fatalf("%d of %d events folded when the run returned (%v)", len(leaves), len(evs), err)
	}
}
