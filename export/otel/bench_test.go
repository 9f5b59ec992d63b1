package otel_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentrt/agentrt/export"
	agentotel "github.com/agentrt/agentrt/export/otel"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// benchRun is the events of one two-step run, as the engine writes them.
var benchRun = []struct{ typ, step, payload string }{
	{"run.created", "", `{"goal":"summarise the notes","limits":{"max_steps":50,"loop_threshold":3}}`},
	{"run.started", "", `{}`},
	{"step.started", "s0", `{"index":0}`},
	{"step.decided", "s0", `{"kind":"tool_call","tool":"read","args":{"path":"notes.txt"},"reason":"look first"}`},
	{"step.policy", "s0", `{"outcome":"allow","reason":"read_only is allow","policy_id":"p1","spec_hash":"abc"}`},
	{"step.tool_started", "s0", `{"tool":"read","args":{"path":"notes.txt"}}`},
	{"step.tool_finished", "s0", `{"tool":"read","duration_ms":3,"summary":"read 120 bytes","content_hash":"def"}`},
	{"step.started", "s1", `{"index":1}`},
	{"step.decided", "s1", `{"kind":"complete","result":{"summary":"done"}}`},
	{"run.finished", "", `{"status":"COMPLETED","reason":"goal_completed","steps":2}`},
}

// BenchmarkExport maps a database of two-step runs (AGENTRT_BENCH_EVENTS
// events, default 20,000, built with direct SQL) to spans, through the
// SDK's batch processor, to an in-process OTLP/HTTP receiver that decodes
// every request. It reports events/s and spans received.
func BenchmarkExport(b *testing.B) {
	n := 20000
	if v := os.Getenv("AGENTRT_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < len(benchRun) {
			b.Fatalf("AGENTRT_BENCH_EVENTS=%q", v)
		}
	}
	runs := n / len(benchRun)
	path := filepath.Join(b.TempDir(), "runs.db")
	if err := fillExportDB(path, runs); err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.OpenExisting(path, true)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rcv := newReceiver(b)
	tp := rcv.provider(b)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		x, err := agentotel.NewExporter(agentotel.Config{TracerProvider: tp})
		if err != nil {
			b.Fatal(err)
		}
		f := export.Follower{Store: st, Once: true}
		if err := f.Follow(context.Background(), x.Sink(context.Background())); err != nil {
			b.Fatal(err)
		}
		if err := tp.ForceFlush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	got := len(rcv.got())
	if want := runs * 4 * b.N; got != want {
		b.Fatalf("received %d spans, want %d", got, want)
	}
	b.ReportMetric(float64(runs*len(benchRun)*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(got)/float64(b.N), "spans/op")
}

func fillExportDB(path string, runs int) error {
	return testrig.FillDB(path, func(ctx context.Context, tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		seq := 0
		for r := 0; r < runs; r++ {
			id := fmt.Sprintf("run-%06d", r)
			if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, goal, status, created_at) VALUES (?, 'g', 'COMPLETED', ?)`, id, t0.Format(time.RFC3339Nano)); err != nil {
				return err
			}
			for i, e := range benchRun {
				seq++
				step := ""
				if e.step != "" {
					step = id + "-" + e.step
				}
				at := t0.Add(time.Duration(seq) * time.Millisecond).Format(time.RFC3339Nano)
				if _, err := ins.ExecContext(ctx, seq, id, step, at, e.typ, e.payload, fmt.Sprintf("%064x", i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
