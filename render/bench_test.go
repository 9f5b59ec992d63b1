package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// BenchmarkMessages renders a 50-step run with 2 KiB results.
func BenchmarkMessages(b *testing.B) {
	var steps []agentrt.Step
	content := json.RawMessage(`"` + strings.Repeat("x", 2048) + `"`)
	for i := 0; i < 50; i++ {
		steps = append(steps, agentrt.Step{Index: i, Status: agentrt.StepDone,
			Decision:    &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Reason: "Reading the next chunk."},
			Observation: &agentrt.Observation{Kind: agentrt.ObsToolResult, Content: content, Summary: "2 KiB of x"}})
	}
	in := agentrt.StepInput{Steps: agentrt.NewSteps(steps...)}
	opts := Options{Opening: "Read every chunk."}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Messages(in, opts); err != nil {
			b.Fatal(err)
		}
	}
}
