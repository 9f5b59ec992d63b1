//go:build unix

package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// foldCrash is the checkpoint crash test on a SQLite file.
var foldCrash = enginekit.FoldCrash{
	Env:          "AGENTRT_TEST_CRASH_FOLD_DB",
	Open:         func(_ context.Context, p string) (agentrt.Store, error) { return sqlite.Open(p) },
	Raw:          func(p string) (*sql.DB, error) { return sql.Open("sqlite", p) },
	SetCrashHook: sqlite.SetCrashHook,
}

// The child half of the crash test folds and dies; every other run of the
// binary runs the tests.
func TestMain(m *testing.M) {
	foldCrash.Child()
	os.Exit(m.Run())
}

// An integrator killed with SIGKILL mid-batch leaves no leaf, hash or
// checkpoint of that batch; a restarted one folds every event exactly once
// and the checkpoints verify.
func TestIntegrator_KilledMidBatchRestartsWithNothingFoldedTwiceOrSkipped(t *testing.T) {
	foldCrash.Run(t, filepath.Join(t.TempDir(), "runs.db"))
}
