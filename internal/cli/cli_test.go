package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/enginetest"
	"github.com/agentrt/agentrt/sqlite"
)

// oneSentence asserts a refusal: exit 1, nothing on stdout, and stderr one
// line holding one sentence.
func oneSentence(t *testing.T, r result, want string) {
	t.Helper()
	if r.code != ExitFailure {
		t.Errorf("exit %d, want %d; stderr %q", r.code, ExitFailure, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	if strings.Contains(line, "\n") || !strings.HasSuffix(line, ".") {
		t.Errorf("stderr is not one line ending in a period: %q", r.stderr)
	}
	if n := len(regexp.MustCompile(`\. [A-Z]`).FindAllString(line, -1)); n > 0 {
		t.Errorf("stderr holds more than one sentence: %q", r.stderr)
	}
	if !strings.Contains(line, want) {
		t.Errorf("stderr %q does not say %q", line, want)
	}
}

// A database group or others can write is refused on every open, read-only
// or not, in one sentence; nothing is decided and the mode is left as it
// was.
func TestOpen_InsecureFileModeRefusedWithOneSentence(t *testing.T) {
	f := newFixture(t)
	if err := os.Chmod(f.path, 0o666); err != nil {
		t.Fatal(err)
	}
	oneSentence(t, f.run(t, nil, "-db", f.path, "runs"), "chmod 600")
	oneSentence(t, f.run(t, nil, "-db", f.path, "approve", f.small, "-yes", "-by", "op"), "group or others can write it")
	fi, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o666 {
		t.Errorf("mode changed to %04o", fi.Mode().Perm())
	}
	if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != "pending" {
		t.Errorf("approvals %v, want still pending", got)
	}
}

// A database carrying a trigger is refused before any statement touches a
// table, read-only or not, and the trigger never fires.
func TestOpen_TriggerCarryingDatabaseRefusedWithOneSentence(t *testing.T) {
	f := newFixture(t)
	db := rawDB(t, f.path)
	exec(t, db, "CREATE TABLE fired (n INTEGER)")
	exec(t, db, "CREATE TRIGGER evil AFTER UPDATE ON approvals BEGIN INSERT INTO fired VALUES (1); END")
	oneSentence(t, f.run(t, nil, "-db", f.path, "show", f.small), `trigger named "evil"`)
	oneSentence(t, f.run(t, nil, "-db", f.path, "approve", f.small, "-yes", "-by", "op"), "never opens a database that could run its author's SQL")
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM fired").Scan(&n); err != nil || n != 0 {
		t.Errorf("trigger fired %d times (%v)", n, err)
	}
	if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != "pending" {
		t.Errorf("approvals %v, want still pending", got)
	}
	exec(t, db, "DROP TRIGGER evil")
	exec(t, db, "CREATE VIEW v AS SELECT 1")
	oneSentence(t, f.run(t, nil, "-db", f.path, "verify"), `view named "v"`)
}

// A symbolic link to a good database is refused: the operator names the
// file itself.
func TestOpen_SymlinkRefusedWithOneSentence(t *testing.T) {
	f := newFixture(t)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(f.path, link); err != nil {
		t.Fatal(err)
	}
	oneSentence(t, f.run(t, nil, "-db", link, "runs"), "symbolic link")
	oneSentence(t, f.run(t, nil, "-db", link, "cancel", f.small, "-by", "op"), "symbolic link")
	if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != "pending" {
		t.Errorf("approvals %v, want still pending", got)
	}
}

// A database of another schema version is refused, saying which side is
// newer.
func TestOpen_SchemaVersionMismatchSaysWhichSideIsNewer(t *testing.T) {
	f := newFixture(t)
	db := rawDB(t, f.path)
	exec(t, db, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, '')", sqlite.SchemaVersion+1)
	oneSentence(t, f.run(t, nil, "-db", f.path, "runs"), fmt.Sprintf("schema version %d is newer than this agentrt's %d", sqlite.SchemaVersion+1, sqlite.SchemaVersion))
	exec(t, db, "DELETE FROM schema_migrations")
	exec(t, db, "INSERT INTO schema_migrations (version, applied_at) VALUES (0, '')")
	oneSentence(t, f.run(t, nil, "-db", f.path, "runs"), "is older than this agentrt's")
}

// A missing database is an error, and agentrt does not create it.
func TestOpen_MissingDatabaseIsErrorNotCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{{"runs"}, {"approve", "r", "-yes", "-by", "op"}, {"cancel", "r", "-by", "op"}} {
		oneSentence(t, (*fixture)(nil).run(t, nil, append([]string{"-db", path}, args...)...), "never creates one")
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the database was created: %v", err)
	}
}

// Every argument is checked before the database is opened: a missing
// database would be exit 1, so exit 2 here shows nothing was opened.
func TestUsage_ExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	cases := [][]string{
		{},
		{"nope"},
		{"runs", "extra"},
		{"runs", "-limit", "0"},
		{"runs", "-limit", "1001"},
		{"runs", "-offset", "-1"},
		{"runs", "-bogus"},
		{"show"},
		{"show", "a", "b"},
		{"show", strings.Repeat("x", 2000)},
		{"events"},
		{"approve", "r"},                       // not a terminal, no -yes
		{"approve", "r", "-yes"},               // no -by and no USER
		{"approve", "r", "-by", "op"},          // not a terminal
		{"-json", "approve", "r", "-by", "op"}, // -json never asks
		{"reject", "r", "extra", "-yes", "-by", "op"},
		{"cancel", "r"}, // no -by and no USER
		{"verify", "-from", "-1"},
		{"verify", "-from", "5", "-to", "2"},
		{"verify", "-head", "3"},
		{"verify", "-head", "0:" + strings.Repeat("a", 64)},
		{"verify", "-head", "3:xyz"},
		{"verify", "-from", "4", "-head", "3:" + strings.Repeat("a", 64)},
		{"demo", "-agent", "robot"},
		{"resume", "r"},
		{"version", "x"},
	}
	for _, c := range cases {
		args := c
		if len(c) > 0 && c[0] != "nope" {
			args = append([]string{"-db", missing}, c...)
		}
		r := (*fixture)(nil).run(t, nil, args...)
		if r.code != ExitUsage {
			t.Errorf("%q: exit %d, want %d; stderr %q", c, r.code, ExitUsage, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%q: stdout %q", c, r.stdout)
		}
	}
	// No database named at all.
	if r := (*fixture)(nil).run(t, nil, "runs"); r.code != ExitUsage || !strings.Contains(r.stderr, "AGENTRT_DB") {
		t.Errorf("no database: exit %d, stderr %q", r.code, r.stderr)
	}
	// Help is usage on stdout, exit 0.
	for _, args := range [][]string{{"help"}, {"-h"}, {"help", "approve"}, {"approve", "-h"}} {
		r := (*fixture)(nil).run(t, nil, args...)
		if r.code != ExitOK || r.stdout == "" || r.stderr != "" {
			t.Errorf("%q: exit %d, stdout %d bytes, stderr %q", args, r.code, len(r.stdout), r.stderr)
		}
	}
}

// The help says -by is a label and whoever can write the database can
// approve.
func TestHelp_SaysByIsALabelAndTheDatabaseIsTheBoundary(t *testing.T) {
	r := (*fixture)(nil).run(t, nil, "help")
	for _, want := range []string{"-by is a label", "whoever can write the database can approve"} {
		if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), want) {
			t.Errorf("help does not say %q", want)
		}
	}
	r = (*fixture)(nil).run(t, nil, "help", "approve")
	if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "whoever can write the database can approve") {
		t.Errorf("approve's help does not say who can approve:\n%s", r.stdout)
	}
}

// hookReader runs hook on its first Read, after everything before the
// prompt has been written, then reads from r.
type hookReader struct {
	hook func()
	r    io.Reader
}

func (h *hookReader) Read(p []byte) (int, error) {
	if h.hook != nil {
		h.hook()
		h.hook = nil
	}
	return h.r.Read(p)
}

// The decision binds to the hash of the approval approve printed: if the
// approval changes between the print and the "yes" (to a request just as
// well formed, with a hash of its own), nothing is decided. Without a
// change, the hash decided is the hash printed.
func TestDecide_BindsToTheHashActuallyShown(t *testing.T) {
	f := newFixture(t)
	interactive := func(e *env) { e.interactive = func(io.Reader) bool { return true } }
	var newHash string
	change := func() {
		st, err := sqlite.OpenExisting(f.path, true)
		if err != nil {
			t.Fatal(err)
		}
		a, err := st.GetApproval(context.Background(), f.small, f.smallApproval)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		pres := json.RawMessage(`{"tool":"write","args":{"path":"innocent.txt"}}`)
		newHash, err = agentrt.ApprovalHash(a.Kind, a.Capability, pres, a.Request)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, rawDB(t, f.path), "UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ?", string(pres), newHash, a.ID)
	}
	r := f.runWith(t, interactive, &hookReader{hook: change, r: strings.NewReader("yes\n")},
		"-db", f.path, "approve", f.small, "-by", "op")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "changed after it was shown") {
		t.Fatalf("exit %d, stderr %q; want a refusal because it changed", r.code, r.stderr)
	}
	shown := regexp.MustCompile(`(?m)^  hash +([0-9a-f]{64})$`).FindStringSubmatch(r.stdout)
	if shown == nil || shown[1] == newHash {
		t.Fatalf("printed hash %v, changed hash %s", shown, newHash)
	}
	if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != "pending" {
		t.Errorf("approvals %v, want still pending", got)
	}
	if strings.Contains(r.stdout, "innocent.txt") {
		t.Errorf("the changed approval was printed")
	}

	// Asked again, it prints the approval as it is now and decides that.
	r = f.runWith(t, interactive, strings.NewReader("yes\n"), "-db", f.path, "approve", f.small, "-by", "op")
	if r.code != ExitOK || !strings.Contains(r.stdout, "innocent.txt") || !strings.Contains(r.stdout, newHash) {
		t.Fatalf("second approve: exit %d, stderr %q", r.code, r.stderr)
	}
	st, err := sqlite.OpenExisting(f.path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.GetApproval(context.Background(), f.small, f.smallApproval)
	if err != nil || a.Status != agentrt.ApprovalApproved || a.Hash != newHash || a.DecidedBy != "op" {
		t.Errorf("approval after: %+v, %v", a, err)
	}
}

// JSON output names the hash decided, which is the approval's.
func TestDecide_JSONIncludesTheDecidedHash(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "-json", "reject", f.small, "-approval", f.smallApproval, "-by", "op", "-note", "no")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Run struct {
			Status agentrt.RunStatus `json:"status"`
		} `json:"run"`
		Approval    agentrt.Approval `json:"approval"`
		DecidedHash string           `json:"decided_hash"`
	}
	// The last line says what was decided; the line before it, the
	// approval as read before the decision.
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil {
		t.Fatal(err)
	}
	if out.DecidedHash == "" || out.DecidedHash != out.Approval.Hash || out.Approval.Status != agentrt.ApprovalRejected || out.Run.Status != agentrt.RunCancelled {
		t.Errorf("got %+v", out)
	}
}

// At a terminal, only "yes" decides; anything else leaves the approval
// pending, and end of input before an answer is a usage refusal.
func TestDecide_InteractiveConfirmation(t *testing.T) {
	interactive := func(e *env) { e.interactive = func(io.Reader) bool { return true } }
	for _, c := range []struct {
		in     string
		code   int
		status string
	}{{"no\n", ExitFailure, "pending"}, {"y\n", ExitFailure, "pending"}, {"", ExitUsage, "pending"}, {"YES\n", ExitOK, "approved"}} {
		f := newFixture(t)
		r := f.runWith(t, interactive, strings.NewReader(c.in), "-db", f.path, "approve", f.small, "-by", "op")
		if r.code != c.code {
			t.Errorf("answer %q: exit %d, want %d; stderr %q", c.in, r.code, c.code, r.stderr)
		}
		if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != c.status {
			t.Errorf("answer %q: approvals %v, want %s", c.in, got, c.status)
		}
		if !strings.Contains(r.stdout, "Type yes to approve it") {
			t.Errorf("answer %q: no prompt in %q", c.in, r.stdout)
		}
	}
}

// Stdin that is not a terminal is never read as an answer.
func TestDecide_NonTerminalStdinIsRefusedNotGuessed(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, strings.NewReader("yes\n"), "-db", f.path, "approve", f.small, "-by", "op")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "not a terminal") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != "pending" {
		t.Errorf("approvals %v, want still pending", got)
	}
}

// /dev/null, a pipe and a regular file are not terminals.
func TestIsTerminalInput_NullPipesAndFilesAreNot(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	file, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, r := range map[string]io.Reader{"null": null, "pipe": pr, "file": file, "reader": strings.NewReader("yes")} {
		if isTerminalInput(r) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}

// Flags may come before or after the run id, and -by is recorded exactly
// as given.
func TestDecide_AcceptsFlagsBeforeOrAfterTheRunIDAndRecordsByAsGiven(t *testing.T) {
	f := newFixture(t)
	by := "  Ada \u202e (not verified)"
	r := f.run(t, nil, "-db", f.path, "approve", "-by", by, f.small, "-note", "ok", "-yes")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got string
	if err := rawDB(t, f.path).QueryRow("SELECT decided_by FROM approvals WHERE run_id = ?", f.small).Scan(&got); err != nil || got != by {
		t.Errorf("decided_by %q (%v), want %q", got, err, by)
	}
	assertTerminalSafe(t, "stdout", r.stdout)
	assertTerminalSafe(t, "stderr", r.stderr)
}

// show escapes bidi controls, isolates, zero-width characters, line
// separators and escape sequences in arguments, and cuts combining-mark
// floods, so none reaches the terminal raw.
func TestShow_BidiAndCombiningMarksInArgumentsEscaped(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "show", f.small)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	assertTerminalSafe(t, "show", r.stdout)
	for _, want := range []string{
		`path (16 bytes): "report\u{202E}fdp.exe"`,
		`"echo safe \u{2066}# rm -rf ~\u{2069}"`,
		`"\u{001B}[2J\u{001B}[Hfake prompt$ "`,
		`"pay\u{200B}pal\u{2028}next"`,
		`\[+296 combining marks dropped]`,
		`"a \"quoted\" \\u{202E} word"`, // text spelling an escape shows its backslash doubled
		`"bell": "\u{0007}"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show does not contain %s", want)
		}
	}
	// The tool's summary tried to forge the end of an approval block; it
	// stays on its step's line.
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "----- end of approval id9999") {
			t.Errorf("a forged closing line reached the start of a line")
		}
	}
}

// A long argument is shown by its head and tail with agentrt's own marker,
// and its own size; its middle is not printed.
func TestShow_LongArgumentTruncatedHeadAndTail(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "show", f.small)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	re := regexp.MustCompile(`(?m)^    long \(10010 bytes\): "HEAD-m+\\\[(\d+) bytes omitted\]m+-TAIL"$`)
	m := re.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no head-and-tail line for the long argument in:\n%s", r.stdout)
	}
	if l := len(m[0]); l > 1200 {
		t.Errorf("the line is %d bytes", l)
	}
	if strings.Contains(r.stdout, strings.Repeat("m", 2000)) {
		t.Error("the middle of the argument was printed")
	}
	// The 1 MB argument, read whole by approve, is shown the same way, and
	// the block still ends with agentrt's own line.
	r = f.run(t, nil, "-db", f.path, "approve", f.big, "-approval", f.bigApproval, "-by", "op")
	if r.code != ExitOK {
		t.Fatalf("approve big: exit %d: %s", r.code, r.stderr)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(bigArgs()), &args); err != nil {
		t.Fatal(err)
	}
	var content string // its size is the decoded string's, as the console shows it
	if err := json.Unmarshal(args["content"], &content); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`content \(%d bytes\): "\\u\{001B\}\[2J\\u\{001B\}\[H\\u\{202E\}A+\\\[\d+ bytes omitted\]A+END\\u\{202E\}"`, len(content))
	if !regexp.MustCompile(want).MatchString(r.stdout) {
		t.Errorf("1 MB argument not shown by head and tail:\n%.3000s", r.stdout)
	}
	if len(r.stdout) > 20000 {
		t.Errorf("approve printed %d bytes for a 1 MB argument", len(r.stdout))
	}
	block, _, _ := strings.Cut(r.stdout, "approval "+f.bigApproval+": approved")
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "----- end of approval "+f.bigApproval+": tool write") {
		t.Errorf("the block ends with %q", last)
	}
}

// verify finds an altered event and exits 1, naming it.
func TestVerify_BrokenChainExitsOne(t *testing.T) {
	f := newFixture(t)
	if r := f.run(t, nil, "-db", f.path, "verify"); r.code != ExitOK || !strings.Contains(r.stdout, "intact: ") {
		t.Fatalf("before: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	exec(t, rawDB(t, f.path), `UPDATE events SET payload_json = '{"outcome":"allow"}' WHERE seq = 7`)
	r := f.run(t, nil, "-db", f.path, "verify")
	if r.code != ExitFailure {
		t.Errorf("exit %d, want %d", r.code, ExitFailure)
	}
	if !strings.Contains(r.stdout, "broken at seq 7: stored hash does not match") || !strings.Contains(r.stdout, "intact before it: 6 event(s), seq 1 to 6") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	j := f.run(t, nil, "-db", f.path, "-json", "verify")
	var rep verifyReport
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || j.code != ExitFailure || rep.Intact || rep.Break == nil || rep.Break.Seq != 7 {
		t.Errorf("json: exit %d, %+v, %v", j.code, rep, err)
	}
}

// Cutting events from the end leaves a chain that verifies, which is why a
// head is kept elsewhere: verify -head fails unless the chain still
// reaches it with that hash.
func TestVerify_CutDatabaseFailsAKeptHead(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "verify")
	m := regexp.MustCompile(`(?m)^head: seq (\d+) hash ([0-9a-f]{64})$`).FindStringSubmatch(r.stdout)
	if r.code != ExitOK || m == nil {
		t.Fatalf("exit %d:\n%s", r.code, r.stdout)
	}
	kept := m[1] + ":" + m[2]
	if r := f.run(t, nil, "-db", f.path, "verify", "-head", kept); r.code != ExitOK || !strings.Contains(r.stdout, "kept head: seq "+m[1]+" matches") {
		t.Fatalf("intact with kept head: exit %d\n%s", r.code, r.stdout)
	}
	exec(t, rawDB(t, f.path), "DELETE FROM events WHERE seq > ? - 3", m[1])

	// The cut chain alone still verifies.
	if r := f.run(t, nil, "-db", f.path, "verify"); r.code != ExitOK {
		t.Errorf("cut chain without a kept head: exit %d", r.code)
	}
	r = f.run(t, nil, "-db", f.path, "verify", "-head", kept)
	if r.code != ExitFailure || !strings.Contains(r.stdout, "kept head NOT reached: seq "+m[1]) {
		t.Errorf("cut chain with the kept head: exit %d\n%s", r.code, r.stdout)
	}
	// A kept head whose hash differs fails too.
	other := "3:" + strings.Repeat("0", 64)
	if r := f.run(t, nil, "-db", f.path, "verify", "-head", other); r.code != ExitFailure || !strings.Contains(r.stdout, "does NOT match") {
		t.Errorf("mismatched kept head: exit %d\n%s", r.code, r.stdout)
	}
	// So does a -to past the head.
	if r := f.run(t, nil, "-db", f.path, "verify", "-to", m[1]); r.code != ExitFailure || !strings.Contains(r.stdout, "not reached: -to") {
		t.Errorf("-to past the head: exit %d\n%s", r.code, r.stdout)
	}
}

// A long verify shows progress on a terminal and nothing otherwise, with
// the same result.
func TestVerify_ProgressOnlyOnATerminal(t *testing.T) {
	f := newFixture(t)
	old := verifyWindow
	verifyWindow = 5
	defer func() { verifyWindow = old }()
	quiet := f.run(t, nil, "-db", f.path, "verify")
	loud := f.runWith(t, func(e *env) { e.progress = func(io.Writer) bool { return true } }, nil, "-db", f.path, "verify")
	if quiet.stderr != "" || !strings.Contains(loud.stderr, "verifying: ") {
		t.Errorf("quiet stderr %q, terminal stderr %q", quiet.stderr, loud.stderr)
	}
	if quiet.stdout != loud.stdout || quiet.code != ExitOK {
		t.Errorf("results differ:\n%s\n%s", quiet.stdout, loud.stdout)
	}
}

// cancel ends a run and refuses one that already ended, changing nothing.
func TestCancel_EndsTheRunAndRefusesATerminalOne(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "cancel", f.small, "-by", "op", "-note", "enough")
	if r.code != ExitOK || !strings.Contains(r.stdout, "CANCELLED (operator_cancelled) by op") {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	var before int
	db := rawDB(t, f.path)
	if err := db.QueryRow("SELECT COUNT(*) FROM events").Scan(&before); err != nil {
		t.Fatal(err)
	}
	r = f.run(t, nil, "-db", f.path, "cancel", f.done, "-by", "op")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "already ended (COMPLETED)") {
		t.Errorf("cancel a completed run: exit %d, %q", r.code, r.stderr)
	}
	var after int
	if err := db.QueryRow("SELECT COUNT(*) FROM events").Scan(&after); err != nil || after != before {
		t.Errorf("events %d -> %d", before, after)
	}
}

// The database can come from the environment.
func TestRuns_ReadsTheDatabaseFromTheEnvironment(t *testing.T) {
	f := newFixture(t)
	r := f.runWith(t, func(e *env) {
		e.getenv = func(k string) string {
			if k == dbEnv {
				return f.path
			}
			return ""
		}
	}, nil, "runs")
	if r.code != ExitOK || !strings.Contains(r.stdout, f.small) {
		t.Errorf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// A write error is a failure, not a silent success.
func TestEvents_ExitsNonZeroWhenOutputFails(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{{"events", f.done}, {"-json", "events", f.done}, {"runs"}, {"show", f.small}} {
		r := f.runWith(t, func(e *env) { e.stdout = failWriter{} }, nil, append([]string{"-db", f.path}, args...)...)
		if r.code != ExitFailure || !strings.Contains(r.stderr, "writing output") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// approve and reject with -hash decide only if the stored approval still has
// the hash show printed. The approval is changed after show (to another
// request just as well formed, with a hash of its own): -approval ID alone
// would decide what the row holds now, but with the printed -hash the
// command exits 1 with one sentence and writes nothing. With the current
// hash it decides, bound to that hash. A -hash that is not a hash is a
// usage error.
func TestDecide_HashFlagBindsToTheHashShowPrinted(t *testing.T) {
	hashLine := regexp.MustCompile(`(?m)^  hash +([0-9a-f]{64})$`)
	for _, verb := range []string{"approve", "reject"} {
		t.Run(verb, func(t *testing.T) {
			f := newFixture(t)
			r := f.run(t, nil, "-db", f.path, "show", f.small)
			m := hashLine.FindStringSubmatch(r.stdout)
			if r.code != ExitOK || m == nil {
				t.Fatalf("show: exit %d, no hash printed: %s", r.code, r.stderr)
			}
			printed := m[1]

			st, err := sqlite.OpenExisting(f.path, true)
			if err != nil {
				t.Fatal(err)
			}
			a, err := st.GetApproval(context.Background(), f.small, f.smallApproval)
			st.Close()
			if err != nil || a.Hash != printed {
				t.Fatalf("stored hash %s, printed %s, %v", a.Hash, printed, err)
			}
			pres := json.RawMessage(`{"tool":"write","args":{"path":"innocent.txt"}}`)
			changed, err := agentrt.ApprovalHash(a.Kind, a.Capability, pres, a.Request)
			if err != nil {
				t.Fatal(err)
			}
			exec(t, rawDB(t, f.path), "UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ?", string(pres), changed, a.ID)

			for _, args := range [][]string{
				{verb, f.small, "-approval", f.smallApproval, "-hash", printed, "-by", "op"},
				{"-json", verb, f.small, "-yes", "-hash", printed, "-by", "op"},
			} {
				before := enginetest.Snapshot(t, rawDB(t, f.path))
				r = f.run(t, nil, append([]string{"-db", f.path}, args...)...)
				line := strings.TrimSuffix(r.stderr, "\n")
				if r.code != ExitFailure || r.stdout != "" || strings.Contains(line, "\n") ||
					!strings.Contains(line, "no longer has hash "+printed) || !strings.HasSuffix(line, "nothing was decided") {
					t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit 1 with one sentence", args, r.code, r.stdout, r.stderr)
				}
				enginetest.RequireUnchanged(t, rawDB(t, f.path), before, strings.Join(args, " "))
			}

			before := enginetest.Snapshot(t, rawDB(t, f.path))
			r = f.run(t, nil, "-db", f.path, verb, f.small, "-approval", f.smallApproval, "-hash", "not-a-hash", "-by", "op")
			if r.code != ExitUsage {
				t.Fatalf("-hash not-a-hash: exit %d, want %d; stderr %q", r.code, ExitUsage, r.stderr)
			}
			enginetest.RequireUnchanged(t, rawDB(t, f.path), before, "a usage error")

			r = f.run(t, nil, "-db", f.path, "-json", verb, f.small, "-approval", f.smallApproval, "-hash", changed, "-by", "op")
			if r.code != ExitOK {
				t.Fatalf("with the current hash: exit %d, stderr %q", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			var decided struct {
				Approval    agentrt.Approval `json:"approval"`
				DecidedHash string           `json:"decided_hash"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &decided); err != nil {
				t.Fatal(err)
			}
			want := agentrt.ApprovalApproved
			if verb == "reject" {
				want = agentrt.ApprovalRejected
			}
			if decided.DecidedHash != changed || decided.Approval.Hash != changed || decided.Approval.Status != want {
				t.Fatalf("decided %+v", decided)
			}
		})
	}
}

// With -json, approve and reject print the approval being decided, as read
// before the decision, on a line of its own before the line saying what was
// decided.
func TestDecide_JSONPrintsTheApprovalBeforeDeciding(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "-json", "approve", f.small, "-yes", "-by", "op")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want the approval and then the decision", len(lines))
	}
	var first struct {
		Deciding *agentrt.Approval `json:"deciding"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Deciding == nil {
		t.Fatalf("first line %.200s: %v", lines[0], err)
	}
	var second struct {
		Approval    agentrt.Approval `json:"approval"`
		DecidedHash string           `json:"decided_hash"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	d := first.Deciding
	if d.ID != f.smallApproval || d.Status != agentrt.ApprovalPending || d.Hash != second.DecidedHash ||
		second.Approval.ID != d.ID || second.Approval.Status != agentrt.ApprovalApproved {
		t.Fatalf("deciding %s %s %s; decided %s %s %s", d.ID, d.Status, d.Hash, second.Approval.ID, second.Approval.Status, second.DecidedHash)
	}
}
