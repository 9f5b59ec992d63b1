package postgres_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// pollOnly is a Postgres store without its Waker capability: a worker on
// it finds work by polling alone, the baseline NOTIFY is measured against.
type pollOnly struct {
	agentrt.Store
	agentrt.DatabaseClock
}

// BenchmarkClaimLatency measures, with the default poll (50 ms), the time
// from an operator's decision (the call that records it, commit included)
// to a worker's claim of the run it unblocks: on Postgres with NOTIFY, on
// Postgres polling only, and on SQLite (polling; the decision is another
// store's, as another process's would be), in one run: p50-ms and p90-ms
// over b.N runs.
func BenchmarkClaimLatency(b *testing.B) {
	for _, backend := range []string{"postgres-notify", "postgres-poll", "sqlite"} {
		b.Run(backend, func(b *testing.B) {
			var st, decider agentrt.Store
			switch backend {
			case "postgres-notify":
				dsn := pgtest.Fresh(b)
				st, decider = benchOpen(b, dsn), benchOpen(b, dsn)
			case "postgres-poll":
				dsn := pgtest.Fresh(b)
				ps := benchOpen(b, dsn)
				st, decider = pollOnly{ps, ps}, benchOpen(b, dsn)
			default:
				s, err := sqlite.Open(filepath.Join(b.TempDir(), "claim.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				d, err := sqlite.Open(s.Path())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { d.Close() })
				st, decider = s, d
			}
			send := agentrt.ToolFunc{
				ToolSpec: agentrt.ToolSpec{Name: "send", Description: "send", SideEffect: agentrt.RemoteMutation, Timeout: time.Minute,
					InputSchema: json.RawMessage(`{"type":"object"}`)},
				Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) { return agentrt.ToolResult{}, nil },
			}
			paused, claimed, finished := make(chan string, 1), make(chan time.Time, 1), make(chan string, 1)
			w, err := agentrt.NewWorker(agentrt.WorkerConfig{
				EngineConfig: agentrt.EngineConfig{
					Store:  st,
					Policy: agentrt.DefaultPolicy(),
					Tools:  []agentrt.Tool{send},
					Observer: func(ev agentrt.Event) {
						switch ev.Type {
						case agentrt.EventApprovalRequest:
							paused <- ev.RunID
						case agentrt.EventRunClaimed:
							if payload := string(ev.Payload); len(payload) > 0 && json.Valid(ev.Payload) {
								var p struct {
									Status agentrt.RunStatus `json:"status"`
								}
								json.Unmarshal(ev.Payload, &p)
								if p.Status == agentrt.RunWaiting {
									claimed <- time.Now()
								}
							}
						case agentrt.EventRunFinished:
							finished <- ev.RunID
						}
					},
				},
				Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{}`, "x"), scripted.Complete(`{}`)}},
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- w.Run(ctx) }()
			var lat, after []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := w.Driver().Enqueue(context.Background(), "g", agentrt.DefaultLimits())
				if err != nil {
					b.Fatal(err)
				}
				<-paused
				as, _ := decider.ListApprovals(context.Background(), r.ID)
				decided := time.Now()
				if err := agentrt.ApproveShown(context.Background(), decider, nil, r.ID, as[0].ID, as[0].Hash, "op", ""); err != nil {
					b.Fatal(err)
				}
				returned := time.Now()
				at := <-claimed
				lat = append(lat, at.Sub(decided))
				after = append(after, at.Sub(returned))
				<-finished
			}
			b.StopTimer()
			cancel()
			<-done
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			sort.Slice(after, func(i, j int) bool { return after[i] < after[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
			// From the decision's return (its commit acknowledged); the
			// claim can land first, so this may be below zero.
			b.ReportMetric(float64(after[len(after)/2].Microseconds())/1000, "p50-after-commit-ms")
		})
	}
}
