package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each mistake a newcomer makes on the command line gets one sentence,
// from the real binaries, naming the real mistake and nothing of the
// machinery behind it: a directory given as -db is not told to chmod, a
// text file is not "file is not a database (26)", a missing policy file
// is not an lstat error, a group-writable policy file gets one prefix,
// and recheck with the policy file given bare says -policy is the way.
func TestErrors_PointAtTheRealMistake(t *testing.T) {
	bin := buildPolicyNextToAgentrt(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.db")
	if err := os.WriteFile(text, []byte("not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose.yaml")
	if err := os.WriteFile(loose, []byte("rules: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o664); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args       []string
		code       int
		want, not  string
		oneLineErr bool
	}{
		{[]string{"-db", dir, "runs"}, ExitFailure, "because it is a directory", "chmod", true},
		{[]string{"-db", text, "runs"}, ExitFailure, "because it is not a SQLite database", "(26)", true},
		{[]string{"policy", "check", filepath.Join(dir, "nosuch.yaml")}, ExitFailure, "agentrt-policy: there is no policy file at " + filepath.Join(dir, "nosuch.yaml"), "lstat", true},
		{[]string{"policy", "check", loose}, ExitFailure, "agentrt-policy: refusing " + loose, "agentrt-policy: agentrt:", true},
		{[]string{"recheck", "-db", text, loose, "RUN"}, ExitUsage, "pass -policy " + loose + " and then the run id", "exactly one run id", false},
	} {
		r := runBinary(t, bin, nil, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, c.not) {
			t.Errorf("agentrt %s: exit %d, stderr %q; want exit %d saying %q and not %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.want, c.not)
		}
		if c.oneLineErr && strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("agentrt %s: stderr is not one line: %q", strings.Join(c.args, " "), r.stderr)
		}
	}
}
