package postgres_test

import (
	"context"
	"fmt"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// echo is the core's benchmark tool, on Postgres.
var echo = kit.EchoTool(nil)

func benchOpen(b *testing.B, dsn string) *postgres.Store {
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkDriver is a run of 100 small steps on Postgres. ns/step divided
// by (commits/step × BenchmarkCommitFloor's ns/op) is the overhead ratio.
func BenchmarkDriver(b *testing.B) {
	const n = 100
	s := benchOpen(b, pgtest.Fresh(b))
	d, limits := kit.BenchDriver(b, s, echo, n)
	before := s.Stats()
	kit.BenchRuns(b, d, limits, n)
	after := s.Stats()
	b.ReportMetric(float64(after.Commits-before.Commits)/float64(b.N*n), "commits/step")
}

// BenchmarkCommitFloor is one synced single-row insert, BEGIN/INSERT/
// COMMIT on one connection to the same cluster: the floor a durable step
// on Postgres is measured against.
func BenchmarkCommitFloor(b *testing.B) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.Fresh(b))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE floor (id bigint PRIMARY KEY, v text)"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO floor (id, v) VALUES ($1, $2)", i, "x"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitFloorStore is the same single-event transaction through
// the store: BEGIN, the chain head's lock, the insert, COMMIT.
func BenchmarkCommitFloorStore(b *testing.B) {
	kit.BenchCommitFloor(b, benchOpen(b, pgtest.Fresh(b)))
}

// BenchmarkConcurrentRuns runs 1, 4, 16 and 32 runs of 20 steps at once on
// one database. shared: one store (one process), whose writer groups their
// commits. stores: a store per run (as many processes), each committing on
// its own connection, so every commit takes the chain head's lock in turn:
// the case the chain head bounds. procs4: four stores (four worker
// processes) with the runs spread across them.
func BenchmarkConcurrentRuns(b *testing.B) {
	for _, mode := range []string{"shared", "stores", "procs4"} {
		for _, runs := range []int{1, 4, 16, 32} {
			b.Run(fmt.Sprintf("%s/runs=%d", mode, runs), func(b *testing.B) {
				const n = 20
				dsn := pgtest.Fresh(b)
				drivers := make([]*agentrt.Driver, runs)
				var stores []*postgres.Store
				var limits agentrt.Limits
				for r := range drivers {
					if r == 0 || mode == "stores" || (mode == "procs4" && r < 4) {
						stores = append(stores, benchOpen(b, dsn))
					}
					drivers[r], limits = kit.BenchDriver(b, stores[r%len(stores)], echo, n)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					kit.StartAll(b, drivers, limits)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*runs*n)/b.Elapsed().Seconds(), "steps/s")
				var commits, updates int64
				for _, s := range stores {
					st := s.Stats()
					commits += st.Commits
					updates += st.Updates
				}
				b.ReportMetric(float64(updates)/float64(commits), "updates/commit")
			})
		}
	}
}
