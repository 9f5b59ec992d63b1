package policycli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cmd/internal/policycli"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

var binary string

// TestMain builds agentrt-policy once; every test runs it as a child
// process.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentrt-policy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "agentrt-policy")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/agentrt/agentrt/cmd/agentrt-policy").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, args ...string) result {
	t.Helper()
	stdout, stderr, code := testrig.Exec(t, binary, []string{"AGENTRT_DB="}, args...)
	return result{stdout, stderr, code}
}

func write(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o600)
	return p
}

func example(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../../examples/policy", name))
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, string(b))
}

// oneSentence asserts a refusal: exit 1, nothing on stdout, one line on
// stderr ending in a period and saying want.
func oneSentence(t *testing.T, r result, want string) {
	t.Helper()
	line := strings.TrimSuffix(r.stderr, "\n")
	if r.code != 1 || r.stdout != "" || strings.Contains(line, "\n") || !strings.HasSuffix(line, ".") || !strings.Contains(line, want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and one sentence saying %q", r.code, r.stdout, r.stderr, want)
	}
}

// check prints the id of a file that compiles, warns about a rule that can
// never match, a rule an earlier one shadows, an unreachable default and
// a default that allows; -strict turns warnings into exit 1.
func TestCheck_WarnsOnRulesThatNeverMatchOrAreShadowed(t *testing.T) {
	dir := t.TempDir()
	f := write(t, dir, "p.yaml", `
rules:
  - name: never
    when: 1 > 2
    outcome: allow
  - name: reads
    match: {tools: ["fs.*"], side_effects: [read_only]}
    outcome: allow
  - name: read-file
    match: {tools: [fs.read_file], side_effects: [read_only]}
    when: args.path == "/x"
    outcome: deny
  - name: conditional
    match: {tools: [fs.read_file]}
    when: run.steps > 2
    outcome: deny
  - name: everything
    outcome: deny
  - name: after-everything
    match: {tools: [x]}
    outcome: allow
default: {outcome: allow}
`)
	r := run(t, "check", f)
	if r.code != 0 {
		t.Fatalf("check exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"compiles; id cel/sha256:",
		`rule "never": can never match`,
		`rule "read-file": is never reached: rule "reads"`,
		`rule "after-everything": is never reached: rule "everything"`,
		`rule "default": is never reached: rule "everything"`,
		`rule "default": allows every request`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, `"conditional"`) {
		t.Errorf("a rule that only a when could shadow was warned about:\n%s", r.stdout)
	}
	if r := run(t, "check", "-strict", f); r.code != 1 {
		t.Fatalf("check -strict with warnings exit %d, want 1", r.code)
	}
	if r := run(t, "check", "-strict", example(t, dir, "policy.yaml")); r.code != 0 || strings.Contains(r.stdout, "warning") {
		t.Fatalf("the example policy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A file that does not compile is refused in one sentence naming the file,
// line, column and rule.
func TestCheck_RefusesABrokenFileInOneSentence(t *testing.T) {
	f := write(t, t.TempDir(), "p.yaml", "rules:\n  - name: typo\n    when: tool.nmae == 'x'\n    outcome: deny\ndefault: {outcome: deny}\n")
	oneSentence(t, run(t, "check", f), `p.yaml:3:15: rule "typo": when: undeclared reference`)
	bad := write(t, t.TempDir(), "p.yaml", minimalPolicy)
	os.Chmod(bad, 0o666)
	oneSentence(t, run(t, "check", bad), "group or others can write it")
}

const minimalPolicy = "rules: []\ndefault: {outcome: deny}\n"

// test passes on the example's own table, and on a mismatch exits 1 and
// shows each failing case with the rule that decided it.
func TestTest_MismatchExitsOneShowingTheRuleThatMatched(t *testing.T) {
	dir := t.TempDir()
	p := example(t, dir, "policy.yaml")
	if r := run(t, "test", p, example(t, dir, "cases.yaml")); r.code != 0 || !strings.Contains(r.stdout, "ok: all 10 cases") {
		t.Fatalf("example cases: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cases := write(t, dir, "bad.yaml", `
cases:
  - name: thinks writes outside are fine
    tool: fs.write_file
    side_effect: local_mutation
    args: {path: /etc/hosts}
    want: {outcome: allow}
  - name: wrong presentation
    tool: payments.pay
    side_effect: remote_mutation
    args: {amount_cents: 20000, payee: bob}
    want: {outcome: require_approval, presentation: {amount: "2.00", currency: EUR, payee: bob}}
  - name: right
    tool: fs.read_file
    side_effect: read_only
    args: {path: /project/x}
    want: {outcome: allow, rule: read-project}
`)
	r := run(t, "test", p, cases)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"FAIL thinks writes outside are fine (line 3): tool fs.write_file, decided by rule write-outside\n  want outcome allow, got deny",
		`FAIL wrong presentation (line 8): tool payments.pay, decided by rule large-payment` + "\n" + `  want presentation {"amount":"2.00","currency":"EUR","payee":"bob"}, got {"amount":"200.00","currency":"EUR","payee":"bob"}`,
		"FAIL: 2 of 3 cases disagree",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "FAIL right") {
		t.Errorf("a passing case was reported:\n%s", r.stdout)
	}
}

// explain shows each rule's match and when, then the decision and the rule
// that made it; text the file chose is escaped; an expression that fails
// is exit 1.
func TestExplain_ShowsEachWhenAndTheDecidingRule(t *testing.T) {
	dir := t.TempDir()
	p := example(t, dir, "policy.yaml")
	r := run(t, "explain", p, "-tool", "fs.write_file", "-side-effect", "local_mutation", "-args", `{"path":"/etc/hosts"}`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"step-budget              matched   when run.steps > 50 => false",
		"read-project             no match",
		"write-project            matched   when has(args.path)",
		"=> false\n  write-outside            matched   true (no when)",
		"decision: deny by rule write-outside: writes outside /project are not allowed",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := run(t, "explain", p, "-tool", "fs.read_file", "-side-effect", "read_only", "-args", `{"path":"/project/a"}`, "-steps", "51"); !strings.Contains(r.stdout, "decision: abort by rule step-budget") {
		t.Errorf("-steps 51 did not abort:\n%s", r.stdout)
	}
	hostile := write(t, dir, "h.yaml", "rules:\n  - name: r\n    when: args.n > 1\n    outcome: deny\n    reason: \"\\e[2Jcleared\"\ndefault: {outcome: deny}\n")
	r = run(t, "explain", hostile, "-tool", "t", "-args", `{"n":2}`)
	if r.code != 0 || strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, "cleared") {
		t.Fatalf("explain printed the file's escape raw or failed: exit %d %q", r.code, r.stdout)
	}
	r = run(t, "explain", hostile, "-tool", "t", "-args", `{}`)
	if r.code != 1 || !strings.Contains(r.stdout, "=> error: ") || !strings.Contains(r.stderr, "ends a run") {
		t.Fatalf("a failing expression: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// recheck re-asks a file about a recorded run: the file that decided it
// finds every decision alike (exit 0); a file that now denies payments
// reports the difference (exit 1).
func TestRecheck_ReportsDecisionsAliveOrChanged(t *testing.T) {
	pf, db := recordRun(t)
	r := run(t, "recheck", "-db", db, "-policy", pf, "run-1")
	if r.code != 0 || !strings.Contains(r.stdout, "all 2 decisions decided alike") || !strings.Contains(r.stdout, "step 1 payments.pay: recorded require_approval, now require_approval: same") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	src, _ := os.ReadFile(pf)
	changed := write(t, t.TempDir(), "policy.yaml", strings.Replace(string(src), "args.amount_cents > 10000", "args.amount_cents > 1000000", 1))
	r = run(t, "recheck", "-db", db, "-policy", changed, "run-1")
	if r.code != 1 || !strings.Contains(r.stdout, "recorded require_approval, now allow: different (was require_approval, now allow)") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	oneSentence(t, run(t, "recheck", "-db", db, "-policy", pf, "no-such-run"), "there is no run no-such-run")
}

// recheck takes the run as the short id a trail prints: the one run whose
// id begins with it.
func TestRecheck_AcceptsAUniqueRunIDPrefix(t *testing.T) {
	pf, db := recordRun(t)
	r := run(t, "recheck", "-db", db, "-policy", pf, "run-")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "run run-1 against ") || !strings.Contains(r.stdout, "all 2 decisions decided alike") {
		t.Fatalf("recheck run-: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Usage errors exit 2 before anything is read.
func TestUsage_ExitCodes(t *testing.T) {
	cases := [][]string{
		{}, {"frobnicate"}, {"check"}, {"test", "one.yaml"}, {"explain", "p.yaml"},
		{"explain", "p.yaml", "-tool", "t", "-side-effect", "sideways"}, {"explain", "p.yaml", "-tool", "t", "-args", "{"},
		{"recheck", "-policy", "p.yaml", "run-1"}, {"recheck", "-db", "x.db", "run-1"}, {"check", "-nope", "p.yaml"},
	}
	for _, args := range cases {
		if r := run(t, args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
	if r := run(t, "help", "explain"); r.code != 0 || !strings.Contains(r.stdout, "-side-effect") {
		t.Errorf("help explain: exit %d %q", r.code, r.stdout)
	}
}

// policyAndStore loads the policy at path and creates runs.db in dir,
// returning the store, which the caller closes, and its path.
func policyAndStore(t *testing.T, dir, path string) (*cel.Policy, *sqlite.Store, string) {
	t.Helper()
	p, err := cel.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	return p, st, db
}

// recordRun copies the example policy to a fresh directory and records a
// run under it: a read, then a payment that waits for approval. It
// returns the policy file and the database.
func recordRun(t *testing.T) (policyFile, db string) {
	t.Helper()
	dir := t.TempDir()
	policyFile = example(t, dir, "policy.yaml")
	p, st, db := policyAndStore(t, dir, policyFile)
	defer st.Close()
	tool := func(name string, se agentrt.SideEffect) agentrt.Tool {
		return agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: name, Description: name, SideEffect: se, Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
			Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) { return agentrt.ToolResult{}, nil }}
	}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Policy: p,
			Tools:  []agentrt.Tool{tool("fs.read_file", agentrt.ReadOnly), tool("payments.pay", agentrt.RemoteMutation)},
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{
			scripted.ToolCall("fs.read_file", `{"path":"/project/a"}`, "read"),
			scripted.ToolCall("payments.pay", `{"amount_cents":50000,"payee":"bob"}`, "pay"),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if run, err := d.StartWithID(context.Background(), "run-1", "g", agentrt.DefaultLimits()); err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v", run.Status, err)
	}
	return policyFile, db
}

// A rule with require_signature: check lists it and explain shows that
// its approval needs a signed grant.
func TestCLI_SignedGrantRuleShownByCheckAndExplain(t *testing.T) {
	path := write(t, t.TempDir(), "policy.yaml", "rules:\n  - name: wire\n    match: {tools: [pay]}\n    outcome: require_approval\n    require_signature: true\ndefault: {outcome: deny}\n")
	if r := run(t, "check", path); r.code != 0 || !strings.Contains(r.stdout, "rule wire: an approval needs a signed grant") {
		t.Fatalf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "explain", path, "-tool", "pay"); r.code != 0 || !strings.Contains(r.stdout, "needs a signed grant") {
		t.Fatalf("explain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Every agentrt-policy command answers -h and --help with its usage on
// stdout and exit 0; the list is the command table's.
func TestCLI_EveryCommandAnswersHelp(t *testing.T) {
	for _, name := range policycli.CommandNames() {
		for _, h := range []string{"-h", "--help"} {
			r := run(t, name, h)
			if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: agentrt-policy "+name+" ") {
				t.Errorf("agentrt-policy %s %s: exit %d, stdout %q, stderr %q", name, h, r.code, r.stdout, r.stderr)
			}
		}
	}
}
