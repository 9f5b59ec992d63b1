package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
)

// show lists the typed blocks of every tool result on its page, step by
// step in page order, read for the whole page at once; a step past the
// first maxBlockSteps is not listed and the page says so.
func TestShow_ListsThePagesResultBlocksStepByStep(t *testing.T) {
	f, st := newBareFixture(t)
	shot := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "shot", Description: "take a screenshot", SideEffect: agentrt.ReadOnly,
		Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			var a struct{ I int }
			json.Unmarshal(c.Args, &a)
			return agentrt.ToolResult{Content: json.RawMessage(`"ok"`), Blocks: []agentrt.ResultBlock{
				{Type: agentrt.ResultText, Text: strings.Repeat("t", a.I+1)},
				{Type: agentrt.ResultImage, MIMEType: "image/png", Data: []byte(fmt.Sprintf("png%d", a.I))},
			}}, nil
		}}
	const calls = maxBlockSteps + 2
	var ds []agentrt.Decision
	for i := 0; i < calls; i++ {
		ds = append(ds, scripted.ToolCall("shot", fmt.Sprintf(`{"i":%d}`, i), "look"))
	}
	ds = append(ds, scripted.Complete(`{}`))
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{shot}, Policy: agentrt.DefaultPolicy(), Now: f.clock.Now, NewID: f.ids.ID},
		Agent:        &scripted.Agent{Decisions: ds},
	})
	if err != nil {
		t.Fatal(err)
	}
	limits := agentrt.DefaultLimits()
	limits.MaxSteps = calls + 1
	r := f.completeAndShow(t, d, st, "shots", limits)
	_, table, ok := strings.Cut(r.stdout, "STEP  BLOCK")
	if !ok {
		t.Fatalf("no block table:\n%s", r.stdout)
	}
	var rows []string
	for _, l := range strings.Split(table, "\n")[1:] {
		if fs := strings.Fields(l); len(fs) >= 4 && (fs[2] == "text" || fs[2] == "image") {
			rows = append(rows, fs[0]+"/"+fs[1]+"/"+fs[2]+"/"+fs[4])
		}
	}
	if len(rows) != 2*maxBlockSteps {
		t.Fatalf("%d block rows, want %d:\n%s", len(rows), 2*maxBlockSteps, table)
	}
	for i := 0; i < maxBlockSteps; i++ {
		text := fmt.Sprintf("%d/0/text/%d", i, i+1)
		image := fmt.Sprintf("%d/1/image/%d", i, len(fmt.Sprintf("png%d", i)))
		if rows[2*i] != text || rows[2*i+1] != image {
			t.Fatalf("step %d's rows %q %q, want %q %q", i, rows[2*i], rows[2*i+1], text, image)
		}
	}
	if !strings.Contains(r.stdout, "blocks of further steps not listed") {
		t.Fatalf("the page does not say steps past %d are not listed:\n%s", maxBlockSteps, r.stdout)
	}
}
