package faulttest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// BenchmarkWorkerProcesses runs real worker processes (this test binary in
// the worker role, each a Worker of concurrency 8 on its own store) on one
// database: 1 and 4 of them. Each iteration enqueues 128 runs of Steps
// steps and waits until every one has completed; steps/s is what the
// processes together sustained, claims and lease renewals included. 4
// processes ÷ 1 is the scaling, for tools that return at once (the
// database is the bound) and for tools that take 20 or 100 ms, as a call
// to another service does (a process's 8 slots are the bound, which more
// processes lift until the database's is reached). chain=none is the
// ceiling: the same processes committing the same rows with no chain at
// all (no hash, no place in a run, no integrator), so chain=run ÷
// chain=none is what the per-run chains and their checkpoints cost:
// chain=run's workers each run the integrator, as agentrt worker does.
// Every variant samples what the backends wait on (lockSampler).
func BenchmarkWorkerProcesses(b *testing.B) {
	pgtest.DSN(b)
	const runs = 128
	for _, tool := range []int{0, 20, 100} {
		for _, procs := range []int{1, 4} {
			for _, chain := range []string{"run", "none"} {
				if chain == "none" && tool > 0 {
					continue // the slots, not the database, bound these
				}
				b.Run(fmt.Sprintf("tool=%dms/procs=%d/chain=%s", tool, procs, chain), func(b *testing.B) {
					benchWorkerProcesses(b, runs, procs, tool, chain == "none")
				})
			}
		}
	}
}

func benchWorkerProcesses(b *testing.B, runs, procs, toolMS int, chainless bool) {
	c := newCluster(b, 5*time.Second)
	c.toolMS, c.chainless, c.checkpoint = toolMS, chainless, !chainless
	st := c.store()
	workers := make([]*proc, procs)
	for i := range workers {
		workers[i] = c.start("w"+strconv.Itoa(i), "")
	}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	ctx := context.Background()
	sampler := sampleLocks(b, pgtest.DSN(b))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.enqueueAs(st, fmt.Sprintf("b%d-", i), runs)
		want := (i + 1) * runs
		deadline := time.Now().Add(5 * time.Minute)
		for {
			var done int
			if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM runs WHERE status = 'COMPLETED'`).Scan(&done); err != nil {
				b.Fatal(err)
			}
			if done == want {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d runs completed after 5 minutes", done, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	b.StopTimer()
	sampler.stop(b)
	b.ReportMetric(float64(b.N*runs*Steps)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(b.N*runs)/b.Elapsed().Seconds(), "runs/s")
}
