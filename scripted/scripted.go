// Package scripted is an agent that replays a list of decisions: step n gets
// Decisions[n]. It is how tests and examples drive the runtime without a model.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

// Agent replays Decisions in order, indexed by how many steps the run has.
type Agent struct {
	Decisions []agentrt.Decision
}

// Decide returns the decision for the next step, or an error once the script
// is exhausted.
func (a *Agent) Decide(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	n := in.Steps.Len()
	if n >= len(a.Decisions) {
		return agentrt.Decision{}, fmt.Errorf("scripted agent: no decision for step %d (script has %d)", n, len(a.Decisions))
	}
	d := a.Decisions[n]
	d.Args = append(json.RawMessage(nil), d.Args...)
	d.Result = append(json.RawMessage(nil), d.Result...)
	return d, nil
}

// ToolCall builds a tool_call decision; args are used as given.
func ToolCall(tool, args, reason string) agentrt.Decision {
	return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: tool, Args: json.RawMessage(args), Reason: reason}
}

// Complete builds a complete decision with a JSON result.
func Complete(result string) agentrt.Decision {
	return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(result)}
}

// Fail builds a fail decision.
func Fail(message string) agentrt.Decision {
	return agentrt.Decision{Kind: agentrt.KindFail, Message: message}
}
