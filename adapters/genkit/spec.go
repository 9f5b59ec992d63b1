package genkit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
)

// RunKey is the key of Genkit's action context that names the agentrt run
// a Generate belongs to. WithRun sets it.
const RunKey = "agentrt.run"

// ToolTimeout bounds one call of a tool that Specs registers.
const ToolTimeout = 5 * time.Minute

// WithRun returns ctx with runID under RunKey in its Genkit action context,
// keeping the context's other keys. Pass it to genkit.Generate, or to a
// flow's Run: a flow hands its action context to every Generate inside it.
// Use an id that survives a restart of your program (a conversation's or
// a job's id), so a restarted Generate finds the run it left.
func WithRun(ctx context.Context, runID string) context.Context {
	ac := core.ActionContext{}
	maps.Copy(ac, core.FromContext(ctx))
	ac[RunKey] = runID
	return core.WithActionContext(ctx, ac)
}

// RunID is the run id WithRun put in ctx's action context, or "".
func RunID(ctx context.Context) string {
	id, _ := core.FromContext(ctx)[RunKey].(string)
	return id
}

// Specs derives the Gate's tool specs from Genkit tools: name, description
// and input schema from each tool's definition, the side-effect class from
// classes. They are registered by spec only (agentrt.SpecOnly): the body
// stays Genkit's tool, run by the Middleware. A tool without a class, or
// whose schema does not encode, is an error naming it.
func Specs(classes map[string]agentrt.SideEffect, tools ...ai.Tool) ([]agentrt.Tool, error) {
	out := make([]agentrt.Tool, 0, len(tools))
	for _, t := range tools {
		def := t.Definition()
		class, ok := classes[def.Name]
		if !ok {
			return nil, fmt.Errorf("genkit: tool %q has no side-effect class in the map", def.Name)
		}
		schema := def.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		raw, err := json.Marshal(schema)
		if err != nil {
			return nil, fmt.Errorf("genkit: the input schema of tool %q does not encode: %w", def.Name, err)
		}
		out = append(out, agentrt.SpecOnly(agentrt.ToolSpec{Name: def.Name, Description: def.Description,
			InputSchema: raw, SideEffect: class, Timeout: ToolTimeout}))
	}
	return out, nil
}
