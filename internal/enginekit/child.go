package enginekit

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartChild starts cmd, a child process of the test, and waits up to
// within for it to print the line mark on stdout; the rest of its stdout is
// read and dropped. If the child ends before the mark or does not print it
// in time (it is then killed), the test fails naming what and showing the
// child's stderr.
func StartChild(t testing.TB, cmd *exec.Cmd, mark string, within time.Duration, what string) {
	t.Helper()
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
				for sc.Scan() {
				}
				return
			}
		}
		reached <- false
	}()
	select {
	case ok := <-reached:
		if !ok {
			cmd.Wait()
			t.Fatalf("%s ended before it printed %q:\n%s", what, mark, stderr.String())
		}
	case <-time.After(within):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%s did not print %q within %s:\n%s", what, mark, within, stderr.String())
	}
}
