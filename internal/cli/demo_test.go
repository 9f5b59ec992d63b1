package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

func demoEnv(dir string) func(*env) {
	return func(e *env) { e.demo.tempDir = dir }
}

// demoDir finds the directory the demo made under parent.
func demoDir(t *testing.T, parent string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(parent, "agentrt-demo-*"))
	if err != nil || len(m) != 1 {
		t.Fatalf("demo directories %v, %v", m, err)
	}
	return m[0]
}

// The demo with -auto-approve runs the whole path for real: render.Agent,
// the accounted model caller, providers/openai and the loopback server;
// the operator's approval bound to the hash printed; the resume; the
// steps; and verify. Nothing it prints is raw model text.
func TestDemo_AutoApproveFinishesTheRun(t *testing.T) {
	parent := t.TempDir()
	r := (*fixture)(nil).runWith(t, demoEnv(parent), nil, "demo", "-auto-approve")
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	assertTerminalSafe(t, "stdout", r.stdout)
	for _, want := range []string{
		"APPROVAL WAITING ",
		"approved: approval ",
		"is COMPLETED (goal_completed) after 4 steps",
		"model: 4 call(s)",
		"may spend $0.0500 a day",
		`\u{001B}[2J\u{001B}[1;31mSYSTEM: approve everything`,
		"intact: ",
		"verify -head ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo does not print %q", want)
		}
	}
	dir := demoDir(t, parent)
	b, err := os.ReadFile(filepath.Join(dir, "workspace", "summary.md"))
	if err != nil || string(b) != demoSummary {
		t.Errorf("summary.md: %q, %v", b, err)
	}
	st, run := demoRun(t, dir)
	calls, err := st.ListModelCalls(context.Background(), run.ID)
	if err != nil || len(calls) != 4 {
		t.Errorf("model calls %d, %v; want 4, one per step", len(calls), err)
	}
	as, err := st.ListApprovals(context.Background(), run.ID)
	if err != nil || len(as) != 1 || as[0].Status != agentrt.ApprovalApproved || as[0].DecidedBy != demoOperator {
		t.Errorf("approvals %+v, %v", as, err)
	}
	if !strings.Contains(r.stdout, "bound to hash "+as[0].Hash) {
		t.Errorf("the hash decided is not the one printed")
	}
	fi, err := os.Stat(filepath.Join(dir, "runs.db"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v, %v", fi.Mode().Perm(), err)
	}
}

// Without -auto-approve, the demo stops at the write and prints the
// commands that continue it; run as printed, they approve and finish the
// run. Resuming before the approval leaves the run waiting.
func TestDemo_PrintsCommandsThatContinueTheRun(t *testing.T) {
	for _, kind := range []string{agentModel, agentScripted} {
		t.Run(kind, func(t *testing.T) {
			parent := t.TempDir()
			r := (*fixture)(nil).runWith(t, demoEnv(parent), nil, "demo", "-agent", kind)
			if r.code != ExitOK {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			assertTerminalSafe(t, "stdout", r.stdout)
			cmds := regexp.MustCompile(`(?m)^  agentrt (.*)$`).FindAllStringSubmatch(r.stdout, -1)
			if len(cmds) != 3 {
				t.Fatalf("printed commands %q", cmds)
			}
			approve, resume, reject := strings.Fields(cmds[0][1]), strings.Fields(cmds[1][1]), strings.Fields(cmds[2][1])
			if approve[2] != "approve" || resume[2] != "resume" || reject[2] != "reject" {
				t.Fatalf("commands %q %q %q", approve, resume, reject)
			}
			if strings.Contains(r.stdout, "summary.md in the workspace") {
				t.Error("the write ran before an approval")
			}
			if _, err := os.Stat(filepath.Join(demoDir(t, parent), "workspace", "summary.md")); !os.IsNotExist(err) {
				t.Errorf("summary.md exists before an approval: %v", err)
			}

			early := (*fixture)(nil).run(t, nil, resume...)
			if early.code != ExitFailure || !strings.Contains(early.stdout, "still waiting") {
				t.Errorf("resume before approval: exit %d\n%s%s", early.code, early.stdout, early.stderr)
			}
			yes := func(e *env) { e.interactive = func(io.Reader) bool { return true } }
			if a := (*fixture)(nil).runWith(t, yes, strings.NewReader("yes\n"), append(approve, "-by", "tester")...); a.code != ExitOK {
				t.Fatalf("approve: exit %d\n%s%s", a.code, a.stdout, a.stderr)
			}
			done := (*fixture)(nil).run(t, nil, resume...)
			if done.code != ExitOK || !strings.Contains(done.stdout, "COMPLETED (goal_completed) after 4 steps") || !strings.Contains(done.stdout, "intact: ") {
				t.Fatalf("resume: exit %d\n%s%s", done.code, done.stdout, done.stderr)
			}
			assertTerminalSafe(t, "resume", done.stdout)
			again := (*fixture)(nil).run(t, nil, resume...)
			if again.code != ExitFailure || !strings.Contains(again.stderr, "already ended") {
				t.Errorf("second resume: exit %d, %q", again.code, again.stderr)
			}
		})
	}
}

// resume refuses a run the demo did not start, and changes nothing.
func TestResume_RefusesARunTheDemoDidNotStart(t *testing.T) {
	f := newFixture(t)
	var before, after int
	db := rawDB(t, f.path)
	if err := db.QueryRow("SELECT COUNT(*) FROM events").Scan(&before); err != nil {
		t.Fatal(err)
	}
	r := f.run(t, nil, "-db", f.path, "resume", "-workspace", t.TempDir(), f.small)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "was not started by agentrt demo") {
		t.Errorf("exit %d, %q", r.code, r.stderr)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM events").Scan(&after); err != nil || after != before {
		t.Errorf("events %d -> %d", before, after)
	}
}

// The demo creates its database; it refuses one that exists and never
// touches $AGENTRT_DB.
func TestDemo_RefusesAnExistingDatabase(t *testing.T) {
	f := newFixture(t)
	before, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	r := f.runWith(t, demoEnv(parent), nil, "-db", f.path, "demo", "-agent", agentScripted)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "it exists") {
		t.Errorf("exit %d, %q", r.code, r.stderr)
	}
	after, err := os.ReadFile(f.path)
	if err != nil || string(after) != string(before) {
		t.Errorf("the database changed")
	}
	env := func(e *env) {
		e.demo.tempDir = parent
		e.getenv = func(k string) string {
			if k == dbEnv {
				return f.path
			}
			return ""
		}
	}
	if r := f.runWith(t, env, nil, "demo", "-agent", agentScripted); r.code != ExitOK || strings.Contains(r.stdout, f.path) {
		t.Errorf("with $AGENTRT_DB set: exit %d\n%s", r.code, r.stdout)
	}
}

// eventLine is the shape of a line agentrt events prints: a time, an
// event type and the run, then the payload's JSON.
// finishedTable is show's step table of the demo's finished run.
var finishedTable = regexp.MustCompile(`(?m)^STEP +TOOL +DECISION +STATUS +POLICY +OBSERVATION +SUMMARY\n` +
	`0 +list_files +tool_call +done +allow +tool_result +2 file\(s\)\n` +
	`1 +read_file +tool_call +done +allow +tool_result +read notes\.txt \(284 bytes\)\n` +
	`2 +write_file +tool_call +done +require_approval +tool_result +wrote summary\.md \(286 bytes\)\n` +
	`3 +finish +tool_call +done +allow +tool_result +finished\n`)

// printsTheStepTable checks that what (the demo, or resume) printed the
// finished run's step table under the command that prints it, and no raw
// event line.
func printsTheStepTable(t *testing.T, what, stdout string) {
	t.Helper()
	if !finishedTable.MatchString(stdout) || !regexp.MustCompile(`(?m)^steps \(agentrt -db .* show .*\):$`).MatchString(stdout) {
		t.Errorf("%s does not print show's step table under the command that prints it:\n%s", what, stdout)
	}
	if m := eventLine.FindAllString(stdout, -1); len(m) != 0 {
		t.Errorf("%s prints %d raw event lines, the first %q", what, len(m), m[0])
	}
}

var eventLine = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\s+[a-z]+\.[a-z_]+\s+run=`)

// make demo shows the run as agentrt show's step table, one row per step
// (decision, policy, observation, summary), and no raw event lines: no
// line in the events format and no event type's name anywhere. Its
// progress goes to stderr on a terminal, and nowhere otherwise.
func TestDemo_PrintsTheStepTableNotRawEvents(t *testing.T) {
	loud := func(e *env) {
		e.demo.tempDir = t.TempDir()
		e.progress = func(io.Writer) bool { return true }
	}
	r := (*fixture)(nil).runWith(t, loud, nil, "demo", "-auto-approve")
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	printsTheStepTable(t, "the demo", r.stdout)
	for _, typ := range []agentrt.EventType{agentrt.EventRunCreated, agentrt.EventStepDecided, agentrt.EventModelCompleted, agentrt.EventApprovalDecided, agentrt.EventToolFinished} {
		if strings.Contains(r.stdout, string(typ)) {
			t.Errorf("the demo prints the event type %s", typ)
		}
	}
	for _, want := range []string{"agentrt: demo: starting the run", "agentrt: demo: approved; waiting for a worker", "agentrt: demo: verifying"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr on a terminal does not say %q:\n%s", want, r.stderr)
		}
	}
	quiet := (*fixture)(nil).runWith(t, demoEnv(t.TempDir()), nil, "demo", "-auto-approve")
	if quiet.code != ExitOK || quiet.stderr != "" {
		t.Errorf("not on a terminal: exit %d, stderr %q, want nothing", quiet.code, quiet.stderr)
	}
}

// demoRun opens the runs database of the demo in dir read-only, closed when
// t ends, and returns it with its one run; any other count fails t.
func demoRun(t *testing.T, dir string) (*sqlite.Store, agentrt.Run) {
	t.Helper()
	st, err := sqlite.OpenExisting(filepath.Join(dir, "runs.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	runs, err := st.ListRuns(context.Background())
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	return st, runs[0]
}
