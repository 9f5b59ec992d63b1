//go:build unix

package postgres_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

const crashFoldDSN = "AGENTRT_TEST_CRASH_FOLD_DSN"

// The child half: fold, and die by SIGKILL inside the fold's transaction,
// after its rows are written and before the commit.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashFoldDSN); dsn != "" {
		st, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			os.Exit(3)
		}
		postgres.SetCrashHook(func(point string) {
			if point == "checkpoint-written" {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		})
		in, _ := checkpoint.NewIntegrator(st, checkpoint.Config{MaxBatch: 100})
		in.Fold(context.Background())
		os.Exit(4) // not reached: the first batch kills the process
	}
	os.Exit(m.Run())
}

// An integrator on PostgreSQL killed with SIGKILL mid-batch leaves no
// leaf, hash or checkpoint of that batch (the server rolls its
// transaction back); a restarted one folds every event exactly once and
// the checkpoints verify.
func TestIntegrator_PostgresKilledMidBatchRestartsWithNothingFoldedTwiceOrSkipped(t *testing.T) {
	dsn := pgtest.Fresh(t)
	st := open(t, dsn)
	defer st.Close()
	ctx := context.Background()
	if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: "r", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()}); err != nil {
			return err
		}
		for i := 0; i < 250; i++ {
			if _, err := tx.EventAppend(agentrt.Event{RunID: "r", At: time.Now(), Type: agentrt.EventRunCreated}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashFoldDSN+"="+dsn)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed mid-batch: %v", err)
	}
	count := func(table string) int64 {
		var n int64
		if err := st.Pool().QueryRow(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, table := range []string{"event_leaves", "tree_hashes", "checkpoints"} {
		if n := count(table); n != 0 {
			t.Fatalf("the killed batch left %d row(s) in %s", n, table)
		}
	}
	in, err := checkpoint.NewIntegrator(st, checkpoint.Config{MaxBatch: 100})
	if err != nil {
		t.Fatal(err)
	}
	// One Fold may stop short where another test's transaction holds the
	// cluster's watermark back; foldAll folds until nothing is left.
	foldAll(t, st, in)
	var leaves, distinct int64
	if err := st.Pool().QueryRow(ctx, "SELECT COUNT(*), COUNT(DISTINCT seq) FROM event_leaves").Scan(&leaves, &distinct); err != nil {
		t.Fatal(err)
	}
	if leaves != 250 || distinct != 250 || count("checkpoints") < 3 {
		t.Fatalf("leaves %d distinct %d checkpoints %d; want 250, 250 and at least 3 (batches of 100)", leaves, distinct, count("checkpoints"))
	}
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Leaves != 250 {
		t.Fatalf("Verify: %v %+v leaves %d", err, rep.Problem, rep.Leaves)
	}
}
