//go:build unix

package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// foldCrash is the checkpoint crash test on the cluster.
var foldCrash = enginekit.FoldCrash{
	Env:          "AGENTRT_TEST_CRASH_FOLD_DSN",
	Open:         func(ctx context.Context, dsn string) (agentrt.Store, error) { return postgres.Open(ctx, dsn) },
	Raw:          func(dsn string) (*sql.DB, error) { return sql.Open("pgx", dsn) },
	SetCrashHook: postgres.SetCrashHook,
}

// The child half of the crash test folds and dies; every other run of the
// binary runs the tests.
func TestMain(m *testing.M) {
	foldCrash.Child()
	os.Exit(m.Run())
}

// An integrator on PostgreSQL killed with SIGKILL mid-batch leaves no
// leaf, hash or checkpoint of that batch (the server rolls its
// transaction back); a restarted one folds every event exactly once and
// the checkpoints verify.
func TestIntegrator_PostgresKilledMidBatchRestartsWithNothingFoldedTwiceOrSkipped(t *testing.T) {
	foldCrash.Run(t, pgtest.Fresh(t))
}
