package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A deleted middle event breaks the chain at the event after it; verify
// names the last event it actually checked, the one before the gap, and
// counts only the events it checked, whether the break falls in the first
// window of the walk or a later one, from the first event or from -from.
func TestVerify_DeletedEventNamesTheLastEventChecked(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "verify")
	m := regexp.MustCompile(`(?m)^head: seq (\d+) `).FindStringSubmatch(r.stdout)
	if r.code != ExitOK || m == nil {
		t.Fatalf("exit %d:\n%s", r.code, r.stdout)
	}
	head, _ := strconv.ParseInt(m[1], 10, 64)
	const gone = 21
	if head < gone+2 {
		t.Fatalf("the fixture has %d events; the test deletes seq %d from its middle", head, gone)
	}
	db := rawDB(t, f.path)
	var lastHash string
	if err := db.QueryRow("SELECT hash FROM events WHERE seq = ?", gone-1).Scan(&lastHash); err != nil {
		t.Fatal(err)
	}
	exec(t, db, "DELETE FROM events WHERE seq = ?", gone)

	old := verifyWindow
	defer func() { verifyWindow = old }()
	for _, c := range []struct {
		window int64
		from   int64
	}{{10000, 0}, {5, 0}, {4, 0}, {10000, 5}, {7, 5}} {
		verifyWindow = c.window
		args := []string{"-db", f.path, "verify"}
		first := int64(1)
		if c.from > 0 {
			args = append(args, "-from", strconv.FormatInt(c.from, 10))
			first = c.from
		}
		name := fmt.Sprintf("window %d from %d", c.window, first)
		r := f.run(t, nil, args...)
		want := fmt.Sprintf("intact before it: %d event(s), seq %d to %d\n", gone-first, first, gone-1)
		if r.code != ExitFailure || !strings.Contains(r.stdout, "broken at seq 22: an event is missing before event 22") || !strings.Contains(r.stdout, want) {
			t.Errorf("%s: exit %d, want %q in:\n%s", name, r.code, want, r.stdout)
		}
		j := f.run(t, nil, append([]string{"-json"}, args...)...)
		var rep struct {
			Checked int64  `json:"checked"`
			Last    int64  `json:"last"`
			Hash    string `json:"hash"`
		}
		if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || rep.Checked != gone-first || rep.Last != gone-1 || rep.Hash != lastHash {
			t.Errorf("%s: -json checked %d last %d (%v), want %d and %d: %s", name, rep.Checked, rep.Last, err, gone-first, gone-1, j.stdout)
		}
	}
}
