package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// prefixRuns are the runs of a database that short ids are tried on: two
// with the engine's layout (12 hex digits of one millisecond, then random
// ones), two a proxy session names, and one whose whole id begins the
// proxy ones'.
var prefixRuns = []string{
	"0190aabbccdd5e6f7a8b9c0d1e2f3a4b",
	"0190aabbccdd9f8e7d6c5b4a39281706",
	"claude-desktop.4f1e9a0c77d2b315",
	"claude-desktop.b07c3d2e1a9f8e6d",
	"claude-d",
}

// prefixDB writes prefixRuns, each a finished one-step run, to a new file.
func prefixDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := newClock()
	for _, id := range prefixRuns {
		n := 0
		d, err := agentrt.NewDriver(agentrt.Config{
			EngineConfig: agentrt.EngineConfig{Store: st, Tools: fixtureTools, Policy: agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow},
				Now: clock.Now, NewID: func() string { n++; return fmt.Sprintf("%s~step%d", id, n) }},
			Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.Complete(`{"done":true}`)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.StartWithID(context.Background(), id, "finish", agentrt.DefaultLimits()); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

var shortRunField = regexp.MustCompile(`  run=(\S+) `)

// The short id each line of `agentrt events` prints is a prefix of the run's
// id that the real binary's show, events, cancel and follow -run accept back
// as that run, for the engine's time-ordered ids and a proxy session's
// alike; it is not the 8 characters runs begun in one minute, or runs of
// one session, share.
func TestCLI_ShortRunIDFromEventsIsAcceptedBack(t *testing.T) {
	bin := buildAgentrt(t)
	db := prefixDB(t)
	for _, id := range prefixRuns[:4] {
		ev := runBinary(t, bin, nil, "-db", db, "events", id)
		m := shortRunField.FindStringSubmatch(ev.stdout)
		if ev.code != ExitOK || m == nil {
			t.Fatalf("events %s: exit %d, no run= field in\n%s%s", id, ev.code, ev.stdout, ev.stderr)
		}
		short := m[1]
		if short == id || !strings.HasPrefix(id, short) || len(short) <= 8 {
			t.Fatalf("events %s printed run=%s, want a prefix of the id longer than 8 characters", id, short)
		}
		for _, args := range [][]string{{"show", short}, {"events", short}, {"follow", "-once", "-run", short}} {
			r := runBinary(t, bin, nil, append([]string{"-db", db, "-json"}, args...)...)
			if r.code != ExitOK || !strings.Contains(r.stdout, `"`+id+`"`) {
				t.Fatalf("%v: exit %d, want run %s in\n%s%s", args, r.code, id, r.stdout, r.stderr)
			}
			for _, other := range prefixRuns {
				if other != id && strings.Contains(r.stdout, `"`+other+`"`) {
					t.Fatalf("%v printed run %s too", args, other)
				}
			}
		}
	}
	// A state change through a short id changes that run: cancel refuses
	// the finished run by its full id.
	r := runBinary(t, bin, nil, "-db", db, "cancel", "-by", "ops", "claude-desktop.4f1e9a0c")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "run claude-desktop.4f1e9a0c77d2b315 already ended") {
		t.Fatalf("cancel by short id: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A prefix several runs share is refused in one sentence that says how
// many and names some; a prefix no run has says so; an exact id wins over
// the longer ids it begins.
func TestCLI_AmbiguousOrUnknownRunPrefixIsOneSentence(t *testing.T) {
	bin := buildAgentrt(t)
	db := prefixDB(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "0190aabb"}, "agentrt: 2 runs have ids that begin with 0190aabb (0190aabbccdd5e6f7a8b9c0d1e2f3a4b, 0190aabbccdd9f8e7d6c5b4a39281706, ...), so give more of the id\n"},
		{[]string{"events", "claude-desktop."}, "agentrt: 2 runs have ids that begin with claude-desktop. (claude-desktop.4f1e9a0c77d2b315, claude-desktop.b07c3d2e1a9f8e6d, ...), so give more of the id\n"},
		{[]string{"cancel", "-by", "ops", "claude"}, "agentrt: 3 runs have ids that begin with claude (claude-d, claude-desktop.4f1e9a0c77d2b315, claude-desktop.b07c3d2e1a9f8e6d, ...), so give more of the id\n"},
		{[]string{"show", "0190ff"}, "agentrt: no run in " + db + " has the id 0190ff or an id that begins with it\n"},
	} {
		r := runBinary(t, bin, nil, append([]string{"-db", db}, c.args...)...)
		if r.code != ExitFailure || r.stderr != c.want || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 1 and %q", c.args, r.code, r.stderr, r.stdout, c.want)
		}
	}
	r := runBinary(t, bin, nil, "-db", db, "-json", "show", "claude-d")
	if r.code != ExitOK || !strings.Contains(r.stdout, `"id":"claude-d"`) {
		t.Fatalf("show claude-d: exit %d, want the run claude-d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
