package agentrt_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updatePayloads = flag.Bool("update-payloads", false, "rewrite testdata/events/payloads.golden")

// random masks the values a run draws at random (an invitation's id, a
// lease owner's name, a budget's id, a digest keyed by a run's random
// salt), which no payload's shape depends on.
var random = regexp.MustCompile(`"(invite_id|owner|previous_owner|budget_id|id|digest)":"[^"]*"`)

// Every payload the paths of everyEvent write, byte for byte, is the one
// the runtime wrote before the catalogue: the golden file was made by this
// test on the commit before it (d1a0990), and the chain holds each
// payload's digest, so a change here is a change of format.
func TestEvents_PayloadBytesMatchThoseWrittenBefore(t *testing.T) {
	_, evs := everyEvent(t, false)
	var lines []string
	for _, ev := range evs {
		p := random.ReplaceAllString(string(ev.Payload), `"$1":"…"`)
		lines = append(lines, string(ev.Type)+"\t"+p)
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", "events", "payloads.golden")
	if *updatePayloads {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for _, l := range gl {
			if !slices.Contains(wl, l) {
				t.Errorf("written now, not before:\n%s", l)
			}
		}
		for _, l := range wl {
			if !slices.Contains(gl, l) {
				t.Errorf("written before, not now:\n%s", l)
			}
		}
	}
}
