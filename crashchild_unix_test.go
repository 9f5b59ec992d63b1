//go:build unix

package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// childWait bounds every wait on a crash test's child or on its lease.
const childWait = 20 * time.Second

// crashFiles names, in a fresh temporary directory, the database a crash
// test and its child share and the file the child's tool appends lines to.
func crashFiles(t *testing.T) (dbPath, linesPath string) {
	dir := t.TempDir()
	return filepath.Join(dir, "agentrt.db"), filepath.Join(dir, "lines.txt")
}

// killChildAt runs this test binary again as the child of the test named
// test, with env added to its environment, waits until the child prints the
// line mark on stdout and kills it there with SIGKILL. The test fails if the
// child ends before the mark, does not reach it within childWait, or exits
// by itself.
func killChildAt(t *testing.T, test, mark string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	kit.StartChild(t, cmd, mark, childWait, "the child")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child exited cleanly; it should have been killed")
	}
}

// resumePastDeadLease resumes runID with d until the killed child's lease,
// which expires at lease, lapses: at most one TTL, since the child renewed it
// until it died. A refusal naming any other expiry (the lease was renewed) or
// still refused after childWait fails the test. It returns Resume's answer
// once the lease no longer refuses it.
func resumePastDeadLease(t *testing.T, d *agentrt.Driver, runID string, lease time.Time) (agentrt.Run, error) {
	t.Helper()
	deadline := time.Now().Add(childWait)
	for {
		run, err := d.Resume(context.Background(), runID)
		var le *agentrt.RunLeasedError
		if !errors.As(err, &le) {
			return run, err
		}
		if !le.ExpiresAt.Equal(lease) || time.Now().After(deadline) {
			t.Fatalf("the dead child's lease was renewed or never lapsed: %v", err)
		}
		time.Sleep(min(time.Until(le.ExpiresAt)+time.Millisecond, 50*time.Millisecond))
	}
}

// effectThenHang is what a crash child's tool does once its effect is
// durable: it prints "effect", the mark the parent's killChildAt waits
// for, and blocks until the parent kills the process.
func effectThenHang() {
	fmt.Println("effect")
	os.Stdout.Sync()
	select {}
}

// appendSynced appends text and a newline to the file at path and syncs
// it: the crash tests' side effect, durable before the tool reports it.
func appendSynced(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileLines reads the lines appendSynced wrote to path.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
