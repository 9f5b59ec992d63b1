package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/sqlite"
)

// fill writes 10,000 runs and, in the last, 1,000 steps, through the
// store as a driver writes them, and returns the long run's id.
func fill(b *testing.B, st agentrt.Store) string {
	b.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limits := agentrt.DefaultLimits()
	limits.MaxSteps = 2000
	const runs, steps = 10000, 1000
	for lo := 0; lo < runs; lo += 1000 {
		if _, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
			for i := lo; i < lo+1000; i++ {
				r := agentrt.Run{ID: fmt.Sprintf("run%05d", i), Goal: "summarise the week", Status: agentrt.RunCompleted,
					Limits: limits, CreatedAt: at.Add(time.Duration(i) * time.Second)}
				if i == runs-1 {
					r.StepCount = steps
				}
				if err := tx.RunInsert(r); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	long := fmt.Sprintf("run%05d", runs-1)
	dec := &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "fetch", Args: json.RawMessage(`{"url":"https://example.com"}`)}
	if _, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
		for i := 0; i < steps; i++ {
			if err := tx.StepInsert(agentrt.Step{ID: fmt.Sprintf("s%04d", i), RunID: long, Index: i, Status: agentrt.StepDone, Decision: dec,
				Observation: &agentrt.Observation{Kind: agentrt.ObsToolResult, Summary: "fetched", Content: json.RawMessage(`{"ok":true}`)},
				StartedAt:   at, FinishedAt: at}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return long
}

// BenchmarkCLI_ShowAndRuns runs the real agentrt binary, process start
// included, for `show` of a 1,000-step run (the default page, 500 steps)
// and `runs` (the newest 100) of a database of 10,000 runs, on SQLite and
// Postgres in one run; p50-ms is one command's median wall time, and
// version (no database) is the process's own start and exit.
func BenchmarkCLI_ShowAndRuns(b *testing.B) {
	agentrtBin := build(b, "agentrt", "cmd/agentrt")
	type db struct{ name, dsn string }
	var dbs []db
	sp := filepath.Join(b.TempDir(), "runs.db")
	s, err := sqlite.Open(sp)
	if err != nil {
		b.Fatal(err)
	}
	long := fill(b, s)
	s.Close()
	dbs = append(dbs, db{"sqlite", sp})
	if pgOK() {
		dsn := freshDSNB(b)
		p, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			b.Fatal(err)
		}
		fill(b, p)
		p.Close()
		dbs = append(dbs, db{"postgres", dsn})
	}
	for _, d := range dbs {
		for _, c := range []struct {
			name string
			args []string
		}{
			{"show-1000-steps", []string{"-db", d.dsn, "show", long}},
			{"runs-of-10000", []string{"-db", d.dsn, "runs"}},
			{"version", []string{"version"}}, // the process alone: the baseline
		} {
			b.Run(d.name+"/"+c.name, func(b *testing.B) {
				var each []time.Duration
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if out, err := exec.Command(agentrtBin, c.args...).CombinedOutput(); err != nil {
						b.Fatalf("agentrt %v: %v\n%.500s", c.args, err, out)
					}
					each = append(each, time.Since(start))
				}
				// The median: on a shared machine the mean is mostly
				// other processes' scheduling.
				sort.Slice(each, func(i, j int) bool { return each[i] < each[j] })
				b.ReportMetric(float64(each[len(each)/2].Microseconds())/1000, "p50-ms")
			})
		}
	}
}
