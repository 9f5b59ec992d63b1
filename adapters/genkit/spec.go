package genkit

import (
	"context"
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

// Specs derives the Gate's tool specs from Genkit tools
// (agentrt.FrameworkTool): name, description and input schema from each
// tool's definition, the side-effect class from classes. They are
// registered by spec only: the body stays Genkit's tool, run by the
// Middleware. A tool missing from classes gets no class, and one whose
// schema does not encode gets none either: agentrt.NewGate refuses both,
// naming the tool.
func Specs(classes map[string]agentrt.SideEffect, tools ...ai.Tool) []agentrt.Tool {
	out := make([]agentrt.Tool, 0, len(tools))
	for _, t := range tools {
		def := t.Definition()
		spec, err := agentrt.FrameworkTool(def.Name, def.Description, def.InputSchema, classes[def.Name], ToolTimeout)
		if err != nil {
			spec = agentrt.SpecOnly(agentrt.ToolSpec{Name: def.Name})
		}
		out = append(out, spec)
	}
	return out
}
