//go:build unix

package checkpoint_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/enginekit"
)

// BenchmarkCheckpointLag runs 16 runs of 20 steps at once on a SQLite
// file with the background integrator (and with synchronous mode) and
// reports each event's lag to the checkpoint that folded it.
func BenchmarkCheckpointLag(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			st, _ := openDB(b)
			enginekit.BenchCheckpointLag(b, st, 20, sync)
		})
	}
}

// BenchmarkVerify reports the events per second checkpoint.Verify checks
// with an inclusion proof each (proofs-events/s), and with the chain's
// own verification too, as agentrt verify does both (verify-events/s).
func BenchmarkVerify(b *testing.B) {
	st, _ := openDB(b)
	ctx := context.Background()
	const events = 20000
	enginekit.SeedEvents(b, st, "v", events)
	in, err := checkpoint.NewIntegrator(st, checkpoint.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, _, err := in.Fold(ctx); err != nil {
		b.Fatal(err)
	}
	var proofs, proofsCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, startCPU := time.Now(), cpuTime(b)
		rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
		if err != nil || rep.Problem != nil || rep.Leaves != events {
			b.Fatalf("Verify: %v %+v %d", err, rep.Problem, rep.Leaves)
		}
		proofs += time.Since(start)
		proofsCPU += cpuTime(b) - startCPU
		chain, err := st.VerifyEvents(ctx, 0, 0)
		if err != nil || !chain.Intact() {
			b.Fatalf("VerifyEvents: %v %+v", err, chain)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*events)/proofs.Seconds(), "proofs-events/s")
	// On a shared machine the wall clock counts other processes' turns:
	// the rate per second of this process's own CPU is the steadier one.
	b.ReportMetric(float64(b.N*events)/proofsCPU.Seconds(), "proofs-events/cpu-s")
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "verify-events/s")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
