//go:build unix

package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/sqlite"
)

// The worker binary folds the events it commits into checkpoints as it
// drives runs, and on SIGTERM stops its integrator with it and exits 0
// promptly; what it folded verifies.
func TestWorker_FoldsCheckpointsAndExitsCleanlyOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	bin, db := filepath.Join(dir, "worker"), filepath.Join(dir, "runs.db")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "-db", db, "-enqueue", "2").CombinedOutput(); err != nil {
		t.Fatalf("enqueue: %v\n%s", err, out)
	}
	var stderr strings.Builder
	w := exec.Command(bin, "-db", db, "-owner", "w1", "-checkpoint-interval", "20ms")
	w.Stderr = &stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Process.Kill()
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// Both runs pause for approval; then every event is folded.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not fold both runs' events in 30s:\n%s", stderr.String())
		}
		_, waiting, err := st.ListRunsByStatusPage(ctx, agentrt.RunWaiting, 10, 0)
		if err != nil || waiting != 2 {
			continue
		}
		if n, _, err := st.CheckpointUnfolded(ctx, time.Now().Add(time.Hour)); err == nil && n == 0 {
			break
		}
	}
	start := time.Now()
	if err := w.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the worker exited %v after SIGTERM:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the worker had not exited 10s after SIGTERM:\n%s", stderr.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Leaves == 0 {
		t.Fatalf("Verify: %v %+v leaves %d", err, rep.Problem, rep.Leaves)
	}
}
