//go:build unix

package agentrt_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// childWait bounds every wait on a crash test's child or on its lease.
const childWait = 20 * time.Second

// killChildAt runs this test binary again as the child of the test named
// test, with env added to its environment, waits until the child prints the
// line mark on stdout and kills it there with SIGKILL. The test fails if the
// child ends before the mark, does not reach it within childWait, or exits
// by itself.
func killChildAt(t *testing.T, test, mark string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == mark {
				reached <- true
				return
			}
		}
		reached <- false
	}()
	select {
	case ok := <-reached:
		if !ok {
			cmd.Wait()
			t.Fatalf("the child ended before it printed %q:\n%s", mark, stderr.String())
		}
	case <-time.After(childWait):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child did not print %q within %s:\n%s", mark, childWait, stderr.String())
	}
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
