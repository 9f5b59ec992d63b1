package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testrig"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// clone copies the fixture's database into a new directory, with a clock
// and id counter where the fixture's stand, so each golden case starts
// from the same record.
func (f *fixture) clone(t *testing.T) *fixture {
	t.Helper()
	g := *f
	g.path = filepath.Join(t.TempDir(), "runs.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(f.path + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(g.path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g.clock, g.ids = f.clock.Clone(), f.ids.Clone()
	return &g
}

// The text and JSON output of every command, over runs carrying escape
// sequences that clear the screen, bidi overrides that reorder a command,
// combining-mark floods and a 1 MB argument. Every output is also checked
// to be safe on a terminal, and every JSON line to be JSON.
func TestGolden_TextAndJSONOutput(t *testing.T) {
	base := newFixture(t)
	yes := func(e *env) { e.interactive = func(io.Reader) bool { return true } }
	none := func(*env) {}
	cases := []struct {
		name  string
		args  func(f *fixture) []string
		opt   func(*env)
		stdin string
	}{
		{"runs", func(f *fixture) []string { return []string{"runs"} }, none, ""},
		{"runs_page", func(f *fixture) []string { return []string{"runs", "-limit", "2", "-offset", "1"} }, none, ""},
		{"runs.json", func(f *fixture) []string { return []string{"-json", "runs", "-limit", "3"} }, none, ""},
		{"show_done", func(f *fixture) []string { return []string{"show", f.done} }, none, ""},
		{"show_done.json", func(f *fixture) []string { return []string{"show", f.done, "-json"} }, none, ""},
		{"show_small", func(f *fixture) []string { return []string{"show", f.small} }, none, ""},
		{"show_small.json", func(f *fixture) []string { return []string{"-json", "show", f.small} }, none, ""},
		{"show_big", func(f *fixture) []string { return []string{"show", f.big} }, none, ""},
		{"show_big.json", func(f *fixture) []string { return []string{"-json", "show", f.big} }, none, ""},
		{"show_cancelled", func(f *fixture) []string { return []string{"show", f.cancelled} }, none, ""},
		{"show_page", func(f *fixture) []string { return []string{"show", f.done, "-limit", "1", "-offset", "1"} }, none, ""},
		{"events_done", func(f *fixture) []string { return []string{"events", f.done} }, none, ""},
		{"events_done.json", func(f *fixture) []string { return []string{"-json", "events", f.done} }, none, ""},
		{"events_big", func(f *fixture) []string { return []string{"events", f.big} }, none, ""},
		{"events_big.json", func(f *fixture) []string { return []string{"-json", "events", f.big} }, none, ""},
		{"events_page", func(f *fixture) []string { return []string{"events", f.small, "-limit", "3", "-offset", "2"} }, none, ""},
		{"approve_small", func(f *fixture) []string { return []string{"approve", f.small, "-by", "op", "-note", "ok " + rlo} }, yes, "yes\n"},
		{"approve_small.json", func(f *fixture) []string { return []string{"-json", "approve", f.small, "-yes", "-by", "op"} }, none, ""},
		{"approve_big", func(f *fixture) []string { return []string{"approve", f.big, "-approval", f.bigApproval, "-by", "op"} }, none, ""},
		{"approve_declined", func(f *fixture) []string { return []string{"approve", f.small, "-by", "op"} }, yes, "no\n"},
		{"approve_done", func(f *fixture) []string { return []string{"approve", f.done, "-yes", "-by", "op"} }, none, ""},
		{"reject_small", func(f *fixture) []string {
			return []string{"reject", f.small, "-yes", "-by", "op", "-note", "not that"}
		}, none, ""},
		{"reject_small.json", func(f *fixture) []string { return []string{"-json", "reject", f.small, "-yes", "-by", "op"} }, none, ""},
		{"cancel_small", func(f *fixture) []string { return []string{"cancel", f.small, "-by", "op", "-note", "stop"} }, none, ""},
		{"cancel_small.json", func(f *fixture) []string { return []string{"-json", "cancel", f.small, "-by", "op"} }, none, ""},
		{"cancel_done", func(f *fixture) []string { return []string{"cancel", f.done, "-by", "op"} }, none, ""},
		{"verify", func(f *fixture) []string { return []string{"verify"} }, none, ""},
		{"verify.json", func(f *fixture) []string { return []string{"-json", "verify"} }, none, ""},
		{"verify_range", func(f *fixture) []string { return []string{"verify", "-from", "3", "-to", "9"} }, none, ""},
		{"verify_to_not_reached", func(f *fixture) []string { return []string{"verify", "-to", "999"} }, none, ""},
		{"version", func(f *fixture) []string { return []string{"version"} }, none, ""},
		{"version.json", func(f *fixture) []string { return []string{"-json", "version"} }, none, ""},
		{"help", func(f *fixture) []string { return []string{"help"} }, none, ""},
		{"no_run", func(f *fixture) []string { return []string{"show", "nope" + clearScreen} }, none, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base.clone(t)
			args := append([]string{"-db", f.path}, c.args(f)...)
			r := f.runWith(t, c.opt, strings.NewReader(c.stdin), args...)
			norm := func(s string) string {
				s = strings.ReplaceAll(s, f.path, "$DB")
				s = strings.ReplaceAll(s, runtime.Version(), "$GO")
				return s
			}
			checkGolden(t, c.name, args, r, strings.HasSuffix(c.name, ".json") && r.code == ExitOK, norm)
		})
	}
}

// checkGolden checks that a command's output is safe on a terminal, that
// its stdout is JSON lines when jsonLines says it should be, and that the
// command and its output, with norm replacing what changes from run to
// run, are testdata/NAME.golden.
func checkGolden(t *testing.T, name string, args []string, r result, jsonLines bool, norm func(string) string) {
	t.Helper()
	assertTerminalSafe(t, "stdout", r.stdout)
	assertTerminalSafe(t, "stderr", r.stderr)
	if jsonLines {
		for i, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("line %d is not JSON: %.200s", i+1, l)
			}
		}
	}
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = clean(shellQuote(a))
	}
	got := fmt.Sprintf("$ agentrt %s\n%s--- stderr\n%s--- exit %d\n", norm(strings.Join(shown, " ")), norm(r.stdout), norm(r.stderr), r.code)
	testrig.Golden(t, filepath.Join("testdata", name+".golden"), []byte(got), *update)
}
