package export_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// benchEventsEnv sets the size of BenchmarkFollow's database. The default
// keeps a -benchtime 1x run quick; the figure in docs/performance.md is
// taken at AGENTRT_BENCH_EVENTS=1000000.
const benchEventsEnv = "AGENTRT_BENCH_EVENTS"

var benchDB struct {
	once sync.Once
	path string
	n    int
	err  error
}

// benchDatabase builds, once per process, a database of n events over
// 1,000 runs with direct SQL inserts in one transaction: the engine would
// take minutes to write a million. The chain hashes are placeholders; the
// follower does not verify.
func benchDatabase(b *testing.B) (string, int) {
	benchDB.once.Do(func() {
		n := 20000
		if v := os.Getenv(benchEventsEnv); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 1 {
				benchDB.err = fmt.Errorf("%s=%q is not a positive count", benchEventsEnv, v)
				return
			}
		}
		dir, err := os.MkdirTemp("", "agentrt-bench-follow")
		if err != nil {
			benchDB.err = err
			return
		}
		benchDB.path, benchDB.n = filepath.Join(dir, "runs.db"), n
		benchDB.err = fillBenchDB(benchDB.path, n)
	})
	if benchDB.err != nil {
		b.Fatal(benchDB.err)
	}
	return benchDB.path, benchDB.n
}

func fillBenchDB(path string, n int) error {
	return testrig.FillDB(path, func(ctx context.Context, tx *sql.Tx) error {
		const runs = 1000
		at := t0.Format(time.RFC3339Nano)
		for r := 0; r < runs; r++ {
			if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, goal, status, created_at) VALUES (?, ?, 'RUNNING', ?)`,
				fmt.Sprintf("run-%04d", r), "a goal of about this length", at); err != nil {
				return err
			}
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		hash := fmt.Sprintf("%064x", 0)
		for i := 1; i <= n; i++ {
			payload := fmt.Sprintf(`{"index":%d,"tool":"read_file","args":{"path":"notes/%d.txt"},"summary":"read 120 bytes"}`, i%50, i)
			if _, err := ins.ExecContext(ctx, i, fmt.Sprintf("run-%04d", i%runs), fmt.Sprintf("step-%d", i/runs), at,
				string(agentrt.EventToolFinished), payload, hash); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkFollow delivers the whole database to a discard sink, from a
// read-only store, with the default page size. It reports events/s and the
// largest live heap seen, which stays flat as the table grows.
func BenchmarkFollow(b *testing.B) {
	path, n := benchDatabase(b)
	st, err := sqlite.OpenExisting(path, true)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	runtime.GC()
	var peak uint64
	var ms runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		count := 0
		f := export.Follower{Store: st, Once: true}
		err := f.Follow(context.Background(), func(agentrt.Event) error {
			if count++; count%10000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if count != n {
			b.Fatalf("delivered %d of %d", count, n)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(n), "events")
	if peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}
