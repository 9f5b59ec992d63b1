package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

// childRSS runs bin with args and returns its output, exit code and peak
// RSS in bytes. Linux carries a process's RSS high-water mark across exec,
// and Go starts a child sharing the parent's memory until it execs, so a
// child started from this test process would report this process's peak.
// A fresh copy of the test binary (TestRSSHelper) starts it instead, and
// its own small footprint is the floor of what is measured.
func childRSS(t *testing.T, bin string, args ...string) (out string, code int, rss int64) {
	t.Helper()
	req, _ := json.Marshal(append([]string{bin}, args...))
	cmd := osexec.Command(os.Args[0], "-test.run=^TestRSSHelper$")
	cmd.Env = append(os.Environ(), "AGENTRT_RSS_HELPER="+string(req))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v: %.500s", err, stderr.String())
	}
	var rep struct {
		Out  string
		Code int
		RSS  int64
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("helper said %.500q: %v", stdout.String(), err)
	}
	return rep.Out, rep.Code, rep.RSS
}

// TestRSSHelper is not a test: childRSS runs it in a fresh process to start
// the command it measures.
func TestRSSHelper(t *testing.T) {
	req := os.Getenv("AGENTRT_RSS_HELPER")
	if req == "" {
		t.Skip("run by childRSS")
	}
	var argv []string
	if err := json.Unmarshal([]byte(req), &argv); err != nil {
		panic(err)
	}
	var out bytes.Buffer
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	// Linux reports ru_maxrss in kilobytes.
	b, _ := json.Marshal(struct {
		Out  string
		Code int
		RSS  int64
	}{out.String(), cmd.ProcessState.ExitCode(), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10})
	os.Stdout.Write(b)
	os.Exit(0)
}

// A database with values far over MaxStoredValue in a run's goal, a step's
// observation and an event's payload: runs, show, events and verify each
// answer, say the value was not read, and peak well under the values' size.
// The memory is the child's max RSS from getrusage, which sees SQLite's
// allocations as well as Go's.
func TestOperatorReads_HugeValuesAreNotLoaded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~600 MB")
	}
	const huge = 200 << 20
	p := filepath.Join(t.TempDir(), "huge.db")
	s, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Written from another process, so that this one stays small.
	bin := buildAgentrt(t)
	fill := filepath.Join(t.TempDir(), "fill.sql")
	sqlText := fmt.Sprintf(`INSERT INTO runs (id, goal, status, limits_json, created_at) VALUES ('big', printf('%%.*c', %[1]d, 'g'), 'COMPLETED', '{}', '2026-01-01T00:00:00Z');
INSERT INTO steps (id, run_id, idx, status, decision_json, observation_json, started_at) VALUES ('big-s', 'big', 0, 'failed',
	'{"kind":"tool_call","tool":"t"}', '{"kind":"tool_error","content":"' || printf('%%.*c', %[1]d, 'o') || '","summary":"s"}', '2026-01-01T00:00:00Z');
INSERT INTO events (run_id, at, type, payload_json, hash) VALUES ('big', '2026-01-01T00:00:00Z', 'run.created', '{"s":"' || printf('%%.*c', %[1]d, 'p') || '"}', '');`, huge)
	if err := os.WriteFile(fill, []byte(sqlText), 0o600); err != nil {
		t.Fatal(err)
	}
	fillDB(t, p, fill)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"runs"}, "not read", ExitOK},
		{[]string{"show", "big"}, "not read", ExitOK},
		{[]string{"-json", "show", "big"}, "larger than any value agentrt writes", ExitOK},
		{[]string{"events", "big"}, fmt.Sprint(huge + 8), ExitOK},
		{[]string{"verify"}, "larger than any", ExitFailure},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, code, rss := childRSS(t, bin, append([]string{"-db", p}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %.500s", code, c.code, out)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("output does not say %q: %.800s", c.want, out)
			}
			if rss > 64<<20 {
				t.Errorf("peak RSS %d MB reading values of %d MB (bound %d MB)", rss>>20, huge>>20, agentrt.MaxStoredValue>>20)
			}
			t.Logf("peak RSS %d MB", rss>>20)
		})
	}
}

// fillDB runs the statements in file against the database at p from a
// fresh process.
func fillDB(t *testing.T, p, file string) {
	t.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^TestFillHelper$")
	cmd.Env = append(os.Environ(), "AGENTRT_FILL_DB="+p, "AGENTRT_FILL_SQL="+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fill: %v: %.500s", err, out)
	}
}

// TestFillHelper is not a test: fillDB runs it in a fresh process.
func TestFillHelper(t *testing.T) {
	p := os.Getenv("AGENTRT_FILL_DB")
	if p == "" {
		t.Skip("run by fillDB")
	}
	q, err := os.ReadFile(os.Getenv("AGENTRT_FILL_SQL"))
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, p)
	if _, err := db.Exec(string(q)); err != nil {
		t.Fatal(err)
	}
}
