package agentrt_test

import (
	"encoding/json"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

// A view's steps are read where they lie: JSON is immutable and costs
// nothing to read; Raw gives bytes of one's own.
func ExampleSteps() {
	steps := agentrt.NewSteps(agentrt.Step{Index: 0, Status: agentrt.StepDone,
		Decision:    &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", Args: json.RawMessage(`{"path":"/a"}`)},
		Observation: &agentrt.Observation{Kind: agentrt.ObsToolResult, Content: json.RawMessage(`{"text":"hi"}`)}})
	for i, st := range steps.All() {
		fmt.Println(i, st.Decision.Tool, st.Decision.Args, st.Observation.Content)
	}
	own := steps.At(0).Decision.Args.Raw()
	own[2] = 'X'
	fmt.Println(string(own), steps.At(0).Decision.Args)
	// Output:
	// 0 read {"path":"/a"} {"text":"hi"}
	// {"Xath":"/a"} {"path":"/a"}
}
