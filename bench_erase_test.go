//go:build unix

package agentrt_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// eraseRuns is how many runs of eraseSteps steps BenchmarkErase erases.
const (
	eraseRuns  = 1000
	eraseSteps = 10
)

// erasableDB writes eraseRuns completed runs of eraseSteps steps once and
// returns the file, which each iteration copies.
func erasableDB(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	path := filepath.Join(dir, "runs.db")
	s, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	d, limits := kit.BenchDriver(b, s, echoTool(false), eraseSteps)
	for i := 0; i < eraseRuns; i++ {
		if r, err := d.Start(context.Background(), "bench", limits); err != nil || r.Status != agentrt.RunCompleted {
			b.Fatalf("run: %v %s", err, r.Status)
		}
	}
	if err := s.Checkpoint(context.Background()); err != nil {
		b.Fatal(err)
	}
	s.Close()
	if keep := os.Getenv("AGENTRT_BENCH_KEEP_DB"); keep != "" {
		// For measuring the CLI's peak RSS on the same database.
		copyFile(b, path, keep)
	}
	return path
}

func copyDB(b *testing.B, from string) string {
	b.Helper()
	to := filepath.Join(b.TempDir(), "copy.db")
	copyFile(b, from, to)
	return to
}

// copyFile writes a copy of the file from, owner-only, at to.
func copyFile(b *testing.B, from, to string) {
	b.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkErase measures, over 1,000 completed runs of 10 steps on a
// SQLite file (secure_delete on, synchronous=FULL), retention erasing them
// all (retain: runs/s, the WAL truncated at its end) and then verify over
// the erased chain (verify: events/s; erased events are hashed by their
// kept digest and checked against run.erased). The runs are written once.
func BenchmarkErase(b *testing.B) {
	src := erasableDB(b)
	ctx := context.Background()
	b.Run("retain", func(b *testing.B) {
		var total, cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s, err := sqlite.Open(copyDB(b, src))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start, c0 := time.Now(), cpuTime()
			rep, err := agentrt.Operator{Store: s}.Retain(ctx, agentrt.RetainOptions{FinishedBefore: time.Now().Add(time.Hour), By: "bench", Reason: "bench"})
			total, cpu = total+time.Since(start), cpu+cpuTime()-c0
			if err != nil || rep.Erased != eraseRuns {
				b.Fatalf("retain = %+v, %v", rep, err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(b.N*eraseRuns)/total.Seconds(), "runs/s")
		// Per second of this process's CPU: on a shared machine the wall
		// figure measures the neighbours too.
		b.ReportMetric(float64(b.N*eraseRuns)/cpu.Seconds(), "runs/cpu-s")
	})
	b.Run("verify-salted", func(b *testing.B) {
		benchVerify(b, src, nil, func(rep agentrt.VerifyReport, head int64) bool { return rep.Checked == head })
	})
	b.Run("verify", func(b *testing.B) {
		retain := func(s *sqlite.Store) error {
			_, err := (agentrt.Operator{Store: s}).Retain(ctx, agentrt.RetainOptions{FinishedBefore: time.Now().Add(time.Hour), By: "bench", Reason: "bench"})
			return err
		}
		benchVerify(b, src, retain, func(rep agentrt.VerifyReport, _ int64) bool { return rep.ErasedRunCount == eraseRuns })
	})
}

// benchVerify times VerifyEvents over the whole chain of a copy of the
// database src, after prepare (when not nil) has run on it untimed; every
// report must be intact and pass want, given the chain's head.
func benchVerify(b *testing.B, src string, prepare func(*sqlite.Store) error, want func(rep agentrt.VerifyReport, head int64) bool) {
	b.StopTimer()
	ctx := context.Background()
	s, err := sqlite.Open(copyDB(b, src))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if prepare != nil {
		if err := prepare(s); err != nil {
			b.Fatal(err)
		}
	}
	head, _, err := s.ChainHead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start, c0 := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		rep, err := s.VerifyEvents(ctx, 0, 0)
		if err != nil || rep.Break != nil || !want(rep, head) {
			b.Fatalf("verify = %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(int64(b.N)*head)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(int64(b.N)*head)/(cpuTime()-c0).Seconds(), "events/cpu-s")

}
