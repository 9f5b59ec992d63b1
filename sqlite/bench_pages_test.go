package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/view"
)

// BenchmarkOperatorPages reads what agentrt runs and agentrt show read (the
// default pages: 100 runs, 500 steps) from a database of runs of 1,000
// steps whose observations are 100 KB each and whose goals are 100 KB. The
// database is AGENTRT_BENCH_DB_MB megabytes (default 100: one such run;
// 1024 gives the DESIGN.md figure), built once per benchmark run.
func BenchmarkOperatorPages(b *testing.B) {
	mb := benchDBMB(b, 100, 100)
	const steps, rowKB = 1000, 100
	runs := mb / (steps * rowKB / 1000)
	p := filepath.Join(b.TempDir(), "pages.db")
	s, err := sqlite.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	// Written through the store, as a driver writes them, so that each row
	// carries what agentrt records beside its JSON.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dec := &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "fetch", Args: json.RawMessage(`{"url":"https://example.com"}`)}
	pol := &agentrt.PolicyDecision{Outcome: agentrt.Allow}
	content := json.RawMessage(`"` + strings.Repeat("o", rowKB*1000) + `"`)
	for r := 0; r < runs; r++ {
		id := fmt.Sprintf("run%03d", r)
		if _, err := s.Update(context.Background(), func(tx agentrt.Tx) error {
			limits := agentrt.DefaultLimits()
			limits.MaxSteps = 2000
			if err := tx.RunInsert(agentrt.Run{ID: id, Goal: strings.Repeat("g", rowKB*1000), Status: agentrt.RunCompleted,
				Limits: limits, StepCount: steps, CreatedAt: at}); err != nil {
				return err
			}
			for i := 0; i < steps; i++ {
				// Every other step failed: its kind and summary must survive the page read.
				kind, status := agentrt.ObsToolResult, agentrt.StepDone
				if i%2 == 1 {
					kind, status = agentrt.ObsToolError, agentrt.StepFailed
				}
				if err := tx.StepInsert(agentrt.Step{ID: fmt.Sprintf("%s-%04d", id, i), RunID: id, Index: i, Status: status,
					Decision: dec, Policy: pol, Observation: &agentrt.Observation{Kind: kind, Content: content, Summary: fmt.Sprintf("step %d", i)},
					StartedAt: at, FinishedAt: at.Add(time.Second)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.OpenExisting(p, true)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	mid := fmt.Sprintf("run%03d", runs/2)
	b.Run("runs", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, _, err := view.RunsPage(ctx, st, 100, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(fi.Size()>>20), "dbMB")
	})
	b.Run("show", func(b *testing.B) {
		var page view.RunDetailPage
		defer reportCPU(b)()
		for b.Loop() {
			page, err = view.DetailPage(ctx, st, mid, 500, 0)
			if err != nil {
				b.Fatal(err)
			}
		}
		if len(page.Steps) != 500 || page.Steps[1].Observation != agentrt.ObsToolError || !strings.HasPrefix(page.Steps[1].Summary, "step 1") {
			b.Fatalf("page read %d steps, the second as %+v", len(page.Steps), page.Steps[1])
		}
		b.ReportMetric(float64(fi.Size()>>20), "dbMB")
	})
}

// BenchmarkVerifyPayload verifies a chain holding one payload of 4, 8 and
// 16 MiB (MaxStoredValue): MB/s stays flat when verifying is linear in the
// payload's size.
func BenchmarkVerifyPayload(b *testing.B) {
	for _, mib := range []int{4, 8, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			p := filepath.Join(b.TempDir(), "verify.db")
			s, err := sqlite.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			payload := json.RawMessage(`{"s":"` + strings.Repeat("v", mib<<20-8) + `"}`)
			if _, err := s.Update(context.Background(), func(tx agentrt.Tx) error {
				if err := tx.RunInsert(agentrt.Run{ID: "r", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()}); err != nil {
					return err
				}
				_, err := tx.EventAppend(agentrt.Event{RunID: "r", At: time.Now(), Type: agentrt.EventRunCreated, Payload: payload})
				return err
			}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(payload)))
			defer reportCPU(b)()
			for b.Loop() {
				rep, err := s.VerifyEvents(context.Background(), 0, 0)
				if err != nil || !rep.Intact() {
					b.Fatalf("%+v %v", rep, err)
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per iteration, a figure the
// other load on a shared machine disturbs less than wall time.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var r syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
			b.Fatal(err)
		}
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64((cpu()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}
