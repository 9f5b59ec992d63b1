package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/testrig"
)

var agentrtBinary struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildAgentrt builds cmd/agentrt once per test binary, so a test runs what
// an operator runs. TestMain removes it.
func buildAgentrt(t *testing.T) string {
	t.Helper()
	gobin, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to build cmd/agentrt")
	}
	agentrtBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentrt-bin-")
		if err != nil {
			agentrtBinary.err = err
			return
		}
		agentrtBinary.path = filepath.Join(dir, "agentrt")
		// The binary lives in the distribution module (cmd/), which links
		// every backend; building in its directory works with or without
		// go.work.
		cmd := osexec.Command(gobin, "build", "-o", agentrtBinary.path, "./agentrt")
		cmd.Dir = filepath.Join("..", "..", "cmd")
		agentrtBinary.out, agentrtBinary.err = cmd.CombinedOutput()
	})
	if agentrtBinary.err != nil {
		t.Fatalf("go build ./cmd/agentrt: %v\n%s", agentrtBinary.err, agentrtBinary.out)
	}
	return agentrtBinary.path
}

// measureEnv makes the test binary a launcher: it runs its arguments as a
// command and writes the command's exit code and peak RSS to the file the
// variable names. Linux carries the peak RSS of the process that execs into
// the new program, so a child of this (large) test process would report the
// test's own peak; a child of a small launcher reports its own.
const measureEnv = "AGENTRT_TEST_MEASURE"

func measureChild(out string, args []string) int {
	cmd := osexec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *osexec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10 // Linux reports KiB
	}
	if err := os.WriteFile(out, fmt.Appendf(nil, "%d %d", cmd.ProcessState.ExitCode(), rss), 0o600); err != nil {
		return 3
	}
	return 0
}

// runMeasured runs bin with args through the launcher and returns what it
// printed, its exit code and its peak RSS in bytes (0 where not reported).
func runMeasured(t *testing.T, bin string, args ...string) (result, int64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "measure")
	cmd := osexec.Command(os.Args[0], append([]string{bin}, args...)...)
	cmd.Env = append(os.Environ(), measureEnv+"="+out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("launcher: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var code int
	var rss int64
	if _, err := fmt.Sscan(string(b), &code, &rss); err != nil {
		t.Fatalf("launcher wrote %q: %v", b, err)
	}
	return result{stdout.String(), stderr.String(), code}, rss
}

// craftDB writes, as a hostile author would, a runs database at this
// build's schema version from the migrations' own text, with one definition
// of the first replaced and the extra statements run, holding one running
// run r1.
func craftDB(t *testing.T, path, old, new string, extra ...string) {
	t.Helper()
	var edit func(string) string
	if old != "" {
		edit = func(ddl string) string { return strings.Replace(ddl, old, new, 1) }
	}
	testrig.CraftDB(t, path, testrig.Migrations(t, "../../sqlite/migrations"), edit, extra...)
}

// A crafted database is refused by the real agentrt binary at exit 1, in
// one sentence naming the object, before any of its author's SQL runs: a
// generated column that builds a 300 MB value, a CHECK constraint, a
// DEFAULT expression and an expression index that would build one on a
// write, and an extra table. The peak RSS shows nothing was built.
func TestOpen_CraftedSchemaRefusedByTheBinaryWithOneSentence(t *testing.T) {
	bin := buildAgentrt(t)
	// Not constant, so SQLite builds it per row read or written, not once
	// per statement, and crafting the file stays cheap.
	const huge = "printf('%.*c', 300000000, id)"
	for _, c := range []struct {
		name     string
		old, new string
		extra    []string
		args     []string
		want     string
	}{
		{name: "generated column", old: "goal TEXT NOT NULL DEFAULT '',", new: "goal TEXT GENERATED ALWAYS AS (" + huge + ") VIRTUAL,",
			args: []string{"runs"}, want: `its table "runs" is not the one agentrt's migrations create`},
		{name: "check constraint", old: "status TEXT NOT NULL,\n\treason", new: "status TEXT NOT NULL CHECK (status = 'RUNNING' OR length(" + huge + ") > 0),\n\treason",
			args: []string{"cancel", "r1", "-by", "op"}, want: `its table "runs" is not the one`},
		{name: "default expression", old: "decided_by TEXT NOT NULL DEFAULT '',", new: "decided_by TEXT NOT NULL DEFAULT (printf('%.*c', 300000000, 's')),",
			args: []string{"cancel", "r1", "-by", "op"}, want: `its table "approvals" is not the one`},
		{name: "expression index", extra: []string{"CREATE INDEX evil ON runs (CASE status WHEN 'RUNNING' THEN '' ELSE " + huge + " END)"},
			args: []string{"cancel", "r1", "-by", "op"}, want: `it holds an index named "evil" that agentrt's migrations do not create`},
		{name: "extra table", extra: []string{"CREATE TABLE extra (x TEXT)"},
			args: []string{"show", "r1"}, want: `it holds a table named "extra"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "runs.db")
			craftDB(t, p, c.old, c.new, c.extra...)
			r, rss := runMeasured(t, bin, append([]string{"-db", p}, c.args...)...)
			oneSentence(t, r, c.want)
			if !strings.Contains(r.stderr, "never opens a database that could run its author's SQL") {
				t.Errorf("stderr does not say why: %q", r.stderr)
			}
			if rss > 100<<20 {
				t.Errorf("agentrt peaked at %d MB refusing the file", rss>>20)
			}
			t.Logf("agentrt %s: exit %d, peak RSS %d MB", strings.Join(c.args, " "), r.code, rss>>20)
		})
	}
}
