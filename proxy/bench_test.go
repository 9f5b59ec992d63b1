package proxy

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkProxyCall measures an allowed read-only call through the proxy
// (host and proxy over in-memory transports, the upstream over streamable
// HTTP on loopback) against the same call made directly to the upstream,
// and one synced SQLite commit, all in the same run: the overhead is
// proxy - direct, and the target is at most the call's synced commits
// times the commit, plus 300µs. commits/call counts the runs database's
// commits (the gate's); an allowed read writes its index row later, off
// its path.
func BenchmarkProxyCall(b *testing.B) {
	c := countCommits(b)
	h := benchHarness(b)
	var n atomic.Int64
	args := func() json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"path":"f%d"}`, n.Add(1)))
	}
	b.Run("direct", func(b *testing.B) {
		client := sdk.NewClient(&sdk.Implementation{Name: "direct", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: h.up.url, MaxRetries: -1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read", Arguments: args()}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proxy", func(b *testing.B) {
		b.ReportAllocs()
		before := c.Commits()
		for b.Loop() {
			res, err := h.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "up_read", Arguments: args()})
			if err != nil || res.IsError {
				b.Fatalf("%v %v", err, res)
			}
		}
		b.ReportMetric(float64(c.Commits()-before)/float64(b.N), "commits/call")
	})
	b.Run("commit", func(b *testing.B) {
		db, err := sql.Open("sqlite", "file://"+filepath.Join(b.TempDir(), "c.db")+"?_pragma=synchronous(FULL)&_pragma=journal_mode(WAL)&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			tx, _ := db.Begin()
			tx.Exec(`INSERT INTO t VALUES (1)`)
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkProxyCallConcurrent is 64 host calls in flight at once on one
// proxy; calls/s is the aggregate, to compare with one at a time (the
// proxy sub-benchmark of BenchmarkProxyCall).
func BenchmarkProxyCallConcurrent(b *testing.B) {
	h := benchHarness(b)
	var n atomic.Int64
	for _, width := range []int{1, 64} {
		b.Run(fmt.Sprintf("inflight=%d", width), func(b *testing.B) {
			b.SetParallelism((width + 1) / 2)
			if width == 1 {
				b.SetParallelism(1)
			}
			start := n.Load()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					args := json.RawMessage(fmt.Sprintf(`{"path":"c%d"}`, n.Add(1)))
					res, err := h.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "up_read", Arguments: args})
					if err != nil || res.IsError {
						b.Errorf("%v %v", err, res)
						return
					}
				}
			})
			b.ReportMetric(float64(n.Load()-start)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

func benchHarness(b *testing.B) *harness {
	b.Helper()
	return newHarness(b, nil)
}
