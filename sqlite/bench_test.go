package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/sqlite"
)

// BenchmarkPageRead reads one page of runs, one run's steps and one page of
// events from a large database whose rows hold megabytes of text each. The
// database is AGENTRT_BENCH_DB_MB megabytes (default 128; docs/performance.md
// records a 1024 MB run).
func BenchmarkPageRead(b *testing.B) {
	mb := benchDBMB(b, 128, 8)
	p := filepath.Join(b.TempDir(), "big.db")
	s, err := sqlite.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db := rawB(b, p)
	const rowMB = 4 // each run: 1 MB goal, 1 MB step decision, 2 MB of event payloads
	rows := mb / rowMB
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		id := fmt.Sprintf("run%05d", i)
		if _, err := tx.Exec(`INSERT INTO runs (id, goal, status, limits_json, created_at) VALUES (?, printf('%.*c', 1048576, 'g'), 'COMPLETED', '{"max_steps":50,"max_consecutive_tool_failures":3,"loop_threshold":3}', '2026-01-01T00:00:00Z')`, id); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO steps (id, run_id, idx, status, decision_json, started_at) VALUES (?, ?, 0, 'done', '{"kind":"tool_call","tool":"t","args":{"s":"' || printf('%.*c', 1048576, 'a') || '"}}', '2026-01-01T00:00:00Z')`, id+"s", id); err != nil {
			b.Fatal(err)
		}
		for e := 0; e < 2; e++ {
			if _, err := tx.Exec(`INSERT INTO events (run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, '2026-01-01T00:00:00Z', 'step.decided', '{"s":"' || printf('%.*c', 1048576, 'p') || '"}', '')`, id, id+"s"); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	db.Close()
	st, err := sqlite.OpenExisting(p, true)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	mid := fmt.Sprintf("run%05d", rows/2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := st.ListRunsPage(ctx, 20, rows/2); err != nil {
			b.Fatal(err)
		}
		if _, _, err := st.ListStepsPage(ctx, mid, 20, 0); err != nil {
			b.Fatal(err)
		}
		if _, _, err := st.ListEventsPage(ctx, mid, 20, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/read")
	b.ReportMetric(float64(mb), "MB")
}

// benchDBMB is the size in megabytes of a benchmark's database:
// AGENTRT_BENCH_DB_MB when set (it must be at least least), else def.
func benchDBMB(b *testing.B, def, least int) int {
	b.Helper()
	v := os.Getenv("AGENTRT_BENCH_DB_MB")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("AGENTRT_BENCH_DB_MB=%q: want a number of megabytes >= %d", v, least)
	}
	return n
}
