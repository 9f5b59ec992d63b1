package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/trace"
)

// jsonEscapeClasses are text a model could choose, one entry per class of
// what trace.Sanitize escapes.
var jsonEscapeClasses = []struct{ name, text string }{
	{"C0 controls", "bell\a esc\x1b[2J tab\t nl\n"},
	{"DEL", "rub\x7fout"},
	{"C1 controls", "csi\u009b2J nel\u0085"},
	{"bidi controls", "user\u202e \u2066admin\u2069 \u061c\u200e\u200f"},
	{"zero-width and format", "pay\u200bpal\u200c\u200d\u2060\u2064\ufeff ad\u00admin a\u180eb \ufff9"},
	{"line and paragraph separators", "one\u2028two\u2029three"},
	{"tags", "ok\U000E0001\U000E0068\U000E0069\U000E007F"},
	{"private use", "font\ue000\U000F0000"},
	{"unassigned and noncharacters", "x\ufdd0\uffff\U0010FFFF"},
	{"invisible letters", "a\u034fb \u115f\u1160\u3164\uffa0 \u17b4\u17b5"},
	{"ideographic variation selectors", "葛\U000E0100"},
	{"Mongolian free variation selectors", "\u1820\u180b\u180c\u180d\u180f"},
	{"variation selectors not after a base", "\ufe0fstart ❤\ufe0f\ufe0f\ufe0f"},
	{"combining marks past four", "Z" + strings.Repeat("\u0301", 9)},
}

// Every rune Sanitize escapes is escaped in the -json output of runs, show
// and events, through the real entry point: each line is JSON whose every
// string, as the bytes a terminal would show, is one Sanitize leaves alone,
// and the text still decodes to what the model chose.
func TestJSON_EveryRuneSanitizeEscapesIsEscapedInRunsShowAndEvents(t *testing.T) {
	for _, c := range jsonEscapeClasses {
		t.Run(c.name, func(t *testing.T) {
			path, runID := escapeClassDB(t, c.text)
			for _, cmd := range [][]string{{"runs"}, {"show", runID}, {"events", runID}} {
				var out, errb bytes.Buffer
				if code := Run(append([]string{"-db", path, "-json"}, cmd...), strings.NewReader(""), &out, &errb); code != ExitOK {
					t.Fatalf("%s: exit %d: %s", cmd, code, errb.String())
				}
				found := false
				for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
					if !json.Valid(line) {
						t.Fatalf("%s: a line is not JSON: %q", cmd[0], line)
					}
					for _, raw := range jsonStrings(line) {
						if want := strings.ReplaceAll(raw, `\`, `\\`); trace.Sanitize(raw) != want {
							t.Errorf("%s: a string shows what Sanitize escapes:\n raw      %+q\n sanitize %+q", cmd[0], raw, trace.Sanitize(raw))
						}
					}
					var v any
					if err := json.Unmarshal(line, &v); err != nil {
						t.Fatalf("%s: %v", cmd[0], err)
					}
					found = found || holds(v, c.text)
				}
				if !found {
					t.Errorf("%s: no value decodes to the model's text %+q:\n%s", cmd[0], c.text, out.String())
				}
			}
		})
	}
}

// escapeClassDB makes a database holding one finished run whose goal, step
// reason, arguments and failure message are all text.
func escapeClassDB(t *testing.T, text string) (path, runID string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	args, _ := json.Marshal(map[string]string{"path": text})
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Tools:  fixtureTools,
			Policy: agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow},
			Now:    newClock().Now,
			NewID:  newCounter().ID,
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("read", string(args), text), scripted.Fail(text)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Start(context.Background(), text, agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return path, r.ID
}

// jsonStrings returns the raw bytes of every string in one line of JSON,
// escapes as written.
func jsonStrings(line []byte) []string {
	var out []string
	for i := 0; i < len(line); i++ {
		if line[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(line) && line[j] != '"' {
			if line[j] == '\\' {
				j++
			}
			j++
		}
		out = append(out, string(line[i+1:min(j, len(line))]))
		i = j
	}
	return out
}

// holds reports whether s is one of the strings in the decoded value v.
func holds(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		for _, e := range x {
			if holds(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if holds(e, s) {
				return true
			}
		}
	}
	return false
}
