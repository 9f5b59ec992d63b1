package genkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/agentrt/agentrt"
	"github.com/firebase/genkit/go/ai"
)

// Options adjust the Middleware; the zero value awaits each approval. Goal
// "" means "genkit generate". Interrupt makes a call that waits on an
// approval end Generate with Genkit's tool interrupt; restart the call
// (ai.WithToolRestarts) once it is decided: the restart's metadata is
// ignored, and only the recorded decision lets the tool run.
type Options = agentrt.AdapterOptions

// Middleware governs every tool call of the Generate it is given to
// (ai.WithUse) with g through Gate.Call: the run is the one WithRun named,
// each call is proposed with its ref as the call id, an allowed call runs
// Genkit's tool once through the gate, and a refused one answers the model
// with {"error": ...} in place of the tool's output. A tool with no class
// in classes never runs. Register the tools with g through Specs.
func Middleware(g *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) ai.Middleware {
	if opts.Goal == "" {
		opts.Goal = "genkit generate"
	}
	m := &middleware{g: g, classes: maps.Clone(classes), opts: opts}
	return ai.MiddlewareFunc(func(context.Context) (*ai.Hooks, error) {
		return &ai.Hooks{WrapModel: m.turn, WrapTool: m.wrap}, nil
	})
}

type middleware struct {
	g       *agentrt.Gate
	classes map[string]agentrt.SideEffect
	opts    Options
}

// turn announces the governed calls of each model response (Gate.Turn),
// so a call that needs approval waits alone while its siblings run.
func (m *middleware) turn(ctx context.Context, mp *ai.ModelParams, next ai.ModelNext) (*ai.ModelResponse, error) {
	resp, err := next(ctx, mp)
	if err == nil && resp != nil {
		var refs []string
		for _, p := range resp.ToolRequests() {
			if _, ok := m.classes[p.ToolRequest.Name]; ok {
				refs = append(refs, p.ToolRequest.Ref)
			}
		}
		m.g.Turn(RunID(ctx), refs...)
	}
	return resp, err
}

func (m *middleware) wrap(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
	runID, name := RunID(ctx), p.Request.Name
	if runID == "" {
		return nil, errors.New("genkit: the context names no agentrt run; call Generate with a context from WithRun")
	}
	args, err := json.Marshal(p.Request.Input)
	if err != nil {
		return refusal("the call's input does not encode as JSON: %v", err), nil
	}
	rep, err := m.g.Reply(ctx, m.opts.Call(runID, p.Request.Ref, name, args,
		func(ctx context.Context, recorded json.RawMessage) (json.RawMessage, error) {
			req := *p.Request
			if err := json.Unmarshal(recorded, &req.Input); err != nil {
				return nil, err
			}
			out, err := next(ctx, &ai.ToolParams{Request: &req, Tool: p.Tool})
			if err != nil {
				return nil, err // the tool's own error (an interrupt included), once recorded
			}
			return json.Marshal(out.Output)
		}))
	switch {
	case err != nil:
		return nil, err
	case rep.Pending != nil:
		return nil, ai.NewToolInterruptError(map[string]any{"agentrt_run": rep.Pending.RunID, "agentrt_approval": rep.Pending.ID})
	case rep.Refusal != "":
		return refusal("%s", rep.Refusal), nil
	}
	var out any
	if json.Unmarshal(rep.Result, &out) != nil {
		out = string(rep.Result)
	}
	return &ai.MultipartToolResponse{Output: out}, nil
}

// refusal is a tool output the model reads as the call's error: Genkit
// fails the whole Generate on a returned error, so it is not one.
func refusal(format string, a ...any) *ai.MultipartToolResponse {
	return &ai.MultipartToolResponse{Output: map[string]any{"error": fmt.Sprintf(format, a...)}}
}
