package adaptertest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// Binary is the real agentrt command, built once per test process from
// this checkout's cmd module.
func Binary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "agentrt-adaptertest-"); binErr != nil {
			return
		}
		_, here, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "agentrt"), "./agentrt")
		cmd.Dir = filepath.Join(filepath.Dir(here), "..", "..", "cmd")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/agentrt: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "agentrt")
}

// Main runs a test binary's tests (a TestMain's m.Run) and removes the
// binary Binary built: TestMain is `os.Exit(adaptertest.Main(m))`.
func Main(m *testing.M) int {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// CLI runs the real binary on the runs database db and fails t unless it
// exits 0; it returns what the binary printed.
func CLI(t testing.TB, db string, args ...string) string {
	t.Helper()
	out, err := exec.Command(Binary(t), append([]string{"-db", db}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("agentrt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Child is this test binary run again as a child process that runs one
// test with an environment variable set, for a test that kills it.
type Child struct {
	cmd   *exec.Cmd
	lines chan string
}

// StartChild runs test (a test's name) in a child process with env
// (NAME=value) added, reading the lines it prints on stdout.
func StartChild(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, lines: make(chan string, 256)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { c.Kill() })
	return c
}

// Line is the rest of the first line the child prints that begins with
// prefix; the child ending first, or Wait passing, fails t.
func (c *Child) Line(t testing.TB, prefix string) string {
	t.Helper()
	timeout := time.After(Wait)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child ended before printing %q", prefix)
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return strings.TrimSpace(rest)
			}
		case <-timeout:
			t.Fatalf("the child printed no %q within %s", prefix, Wait)
		}
	}
}

// Kill sends SIGKILL to the child and reaps it.
func (c *Child) Kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	_ = c.cmd.Wait()
}
