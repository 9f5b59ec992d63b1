package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
)

// show gives each argument's size as its decoded bytes, the size the
// console shows: "write" is 5 bytes, not the 7 of its JSON text, and a
// path holding an escape counts the character, not the escape.
func TestShow_ArgumentSizesAreDecodedBytes(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "show", f.small)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{`tool (5 bytes): "write"`, `path (16 bytes): "report\u{202E}fdp.exe"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show does not say %s", want)
		}
	}
	if strings.Contains(r.stdout, `tool (7 bytes)`) {
		t.Errorf("show counts a string's JSON quotes in its size")
	}
}

// show lists an embedded resource's and a resource link's URI next to
// its digest, escaped, so an operator can tell which file a tool
// returned; a block that is neither shows none.
func TestShow_ResourceBlocksNameTheirURI(t *testing.T) {
	f, st := newBareFixture(t)
	read := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "read", Description: "read a file", SideEffect: agentrt.ReadOnly,
		Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`"ok"`), Blocks: []agentrt.ResultBlock{
				{Type: agentrt.ResultText, Text: "see below"},
				{Type: agentrt.ResultResource, URI: "file:///srv/report.csv", MIMEType: "text/csv", Text: "a,b\n1,2\n"},
				{Type: agentrt.ResultResourceLink, URI: "https://example.test/chart" + rlo + ".png", Name: "chart"},
			}}, nil
		}}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{read}, Policy: agentrt.DefaultPolicy(), Now: f.clock.Now, NewID: f.ids.ID},
		Agent:        &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("read", `{}`, "look"), scripted.Complete(`{}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := f.completeAndShow(t, d, st, "read a file", agentrt.DefaultLimits())
	assertTerminalSafe(t, "show", r.stdout)
	rows := map[string]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		if fs := strings.Fields(l); len(fs) == 7 && fs[0] == "0" {
			rows[fs[2]] = fs[6]
		}
	}
	want := map[string]string{"text": "-", "resource": "file:///srv/report.csv", "resource_link": `https://example.test/chart\u{202E}.png`}
	for typ, uri := range want {
		if rows[typ] != uri {
			t.Errorf("%s block's URI column %q, want %q:\n%s", typ, rows[typ], uri, r.stdout)
		}
	}
}

// completeAndShow starts goal on d, which must complete it, closes st as
// a finished process leaves its database, and returns agentrt show of the
// run, which must succeed.
func (f *fixture) completeAndShow(t *testing.T, d *agentrt.Driver, st io.Closer, goal string, limits agentrt.Limits) result {
	t.Helper()
	run, err := d.Start(context.Background(), goal, limits)
	st.Close()
	if err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("run %s: %v", run.Status, err)
	}
	r := f.run(t, nil, "-db", f.path, "show", run.ID)
	if r.code != ExitOK {
		t.Fatalf("show: %d %s", r.code, r.stderr)
	}
	return r
}
