//go:build unix

package enginekit

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
)

// FoldCrash is the checkpoint integrator's crash test on one backend: a
// child process folds and is killed by SIGKILL inside the fold's
// transaction, after its rows are written and before the commit; the
// parent then checks that the batch left nothing and that a restarted
// integrator folds every event exactly once.
type FoldCrash struct {
	// Env names the environment variable that hands the child the
	// database's address; the backend's TestMain calls Child.
	Env string
	// Open opens a store on the database at addr.
	Open func(ctx context.Context, addr string) (agentrt.Store, error)
	// Raw opens a database/sql handle on the database at addr.
	Raw func(addr string) (*sql.DB, error)
	// SetCrashHook is the backend's hook on its crash points.
	SetCrashHook func(func(point string))
}

// foldCrashBatch is the child's batch size: the log holds more than two
// batches, so the restart folds over several.
const foldCrashBatch = 100

// Child is the child half, for the backend's TestMain: when Env is set it
// folds the database Env names and dies at the checkpoint-written crash
// point, so it never returns; otherwise it returns at once.
func (c FoldCrash) Child() {
	addr := os.Getenv(c.Env)
	if addr == "" {
		return
	}
	st, err := c.Open(context.Background(), addr)
	if err != nil {
		os.Exit(3)
	}
	cs, err := checkpoint.For(st)
	if err != nil {
		os.Exit(3)
	}
	c.SetCrashHook(func(point string) {
		if point == "checkpoint-written" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
	in, _ := checkpoint.NewIntegrator(cs, checkpoint.Config{MaxBatch: foldCrashBatch})
	in.Fold(context.Background())
	os.Exit(4) // not reached: the first batch kills the process
}

// Run is the parent half on the fresh database at addr: 250 events, the
// child killed mid-batch, then no leaf, tree hash or checkpoint of that
// batch, and a restarted integrator that folds each event once into
// checkpoints that verify.
func (c FoldCrash) Run(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	st, err := c.Open(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs, err := checkpoint.For(st)
	if err != nil {
		t.Fatal(err)
	}
	const events = 250
	FillRun(t, st, "r", events, nil)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), c.Env+"="+addr)
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed mid-batch: %v", err)
	}
	db, err := c.Raw(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(table string) int64 {
		var n int64
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, table := range []string{"event_leaves", "tree_hashes", "checkpoints"} {
		if n := count(table); n != 0 {
			t.Fatalf("the killed batch left %d row(s) in %s", n, table)
		}
	}
	in, err := checkpoint.NewIntegrator(cs, checkpoint.Config{MaxBatch: foldCrashBatch})
	if err != nil {
		t.Fatal(err)
	}
	if n := FoldAll(t, st, in); n != events {
		t.Fatalf("the restart folded %d events, want %d", n, events)
	}
	var leaves, distinct int64
	if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT seq) FROM event_leaves").Scan(&leaves, &distinct); err != nil {
		t.Fatal(err)
	}
	// Batches of 100 make at least 3 checkpoints; a fold stopped short
	// by another test's transaction (PostgreSQL) makes more.
	if cps := count("checkpoints"); leaves != events || distinct != events || cps < 3 {
		t.Fatalf("leaves %d distinct %d checkpoints %d; want %d, %d and at least 3", leaves, distinct, cps, events, events)
	}
	rep, err := checkpoint.Verify(ctx, cs, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Leaves != events {
		t.Fatalf("Verify: %v %+v leaves %d", err, rep.Problem, rep.Leaves)
	}
}
