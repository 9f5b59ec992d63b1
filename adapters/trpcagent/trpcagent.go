package trpcagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"time"

	"github.com/agentrt/agentrt"
	"trpc.group/trpc-go/trpc-agent-go/agent"
	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/tool"
)

// Options adjusts Govern; the zero value waits for approvals in
// Gate.Await and begins runs with agentrt.FrameworkLimits. Goal "" means
// "trpc-agent-go session <run id>". Interrupt makes a call that needs
// approval end at once with a tool error naming the approval instead of
// waiting (trpc-agent-go has no tool interrupt a before-tool callback can
// raise); the model's identical call, made again once an operator
// decided, runs only on the recorded grant.
type Options = agentrt.AdapterOptions

// RunID is the agentrt run that holds a trpc-agent-go session's calls:
// the app, user and session ids, each path-escaped, so a session kept by
// a durable session service keeps its run across restarts.
func RunID(app, user, session string) string {
	return "trpc:" + url.PathEscape(app) + "/" + url.PathEscape(user) + "/" + url.PathEscape(session)
}

// Specs are the Gate's tools for trpc-agent-go tools
// (agentrt.FrameworkTool), registered by spec only (the body stays the
// framework's tool): name, description and input schema from each
// tool's Declaration, the side-effect class from classes (a tool with
// none is refused by agentrt.NewGate, naming it), and timeout.
func Specs(tools []tool.Tool, classes map[string]agentrt.SideEffect, timeout time.Duration) ([]agentrt.Tool, error) {
	out := make([]agentrt.Tool, 0, len(tools))
	for _, t := range tools {
		d := t.Declaration()
		var schema any
		if d.InputSchema != nil {
			schema = d.InputSchema
		}
		spec, err := agentrt.FrameworkTool(d.Name, d.Description, schema, classes[d.Name], timeout)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// Callbacks are an llmagent's hooks into the gate: BeforeTool governs
// each call; AfterModel announces which calls a model turn holds
// (Gate.Turn), so a call that waits for an operator does not hold up its
// siblings.
type Callbacks struct {
	BeforeTool tool.BeforeToolCallbackStructured
	AfterModel model.AfterModelCallbackStructured
}

// AgentOptions are the llmagent options that install the callbacks. An
// agent with callbacks of its own registers BeforeTool and AfterModel on
// its tool.Callbacks and model.Callbacks instead (first, so nothing
// before them skips the gate).
func (c Callbacks) AgentOptions() []llmagent.Option {
	return []llmagent.Option{
		llmagent.WithToolCallbacks(tool.NewCallbacks().RegisterBeforeTool(c.BeforeTool)),
		llmagent.WithModelCallbacks(model.NewCallbacks().RegisterAfterModel(c.AfterModel)),
	}
}

// Govern returns the callbacks that put every tool call of an llmagent
// under g through Gate.Call. classes names the tools that may run (those
// given to Specs); any other tool's call is refused as a tool error.
func Govern(g *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) Callbacks {
	gv := &governor{g: g, classes: maps.Clone(classes), opts: opts}
	return Callbacks{BeforeTool: gv.before, AfterModel: gv.afterModel}
}

type governor struct {
	g       *agentrt.Gate
	classes map[string]agentrt.SideEffect
	opts    Options
}

// runOf is the run of the invocation ctx carries, and its agent.
func runOf(ctx context.Context) (string, agent.Agent) {
	inv, ok := agent.InvocationFromContext(ctx)
	if !ok || inv == nil || inv.Session == nil {
		return "", nil
	}
	return RunID(inv.Session.AppName, inv.Session.UserID, inv.Session.ID), inv.Agent
}

// afterModel announces the governed calls of a complete model response;
// it leaves the response as it is.
func (gv *governor) afterModel(ctx context.Context, a *model.AfterModelArgs) (*model.AfterModelResult, error) {
	run, _ := runOf(ctx)
	if a.Error != nil || a.Response == nil || a.Response.IsPartial || run == "" {
		return nil, nil
	}
	var ids []string
	for _, c := range a.Response.Choices {
		for _, tc := range c.Message.ToolCalls {
			if gv.classes[tc.Function.Name] != "" {
				ids = append(ids, tc.ID)
			}
		}
	}
	gv.g.Turn(run, ids...)
	return nil, nil
}

// before proposes the call and answers it in the framework's terms: a
// CustomResult (the recorded result) skips the framework's own run of the
// tool, a returned error is the tool error the model reads, and an error
// that is an agent.StopError ends the framework's run.
func (gv *governor) before(ctx context.Context, a *tool.BeforeToolArgs) (*tool.BeforeToolResult, error) {
	run, ag := runOf(ctx)
	if run == "" {
		return nil, agent.NewStopError("agentrt: the context carries no trpc-agent-go invocation with a session, so no run can hold the call")
	}
	ct := callable(ag, a.ToolName)
	if _, known := gv.classes[a.ToolName]; !known || ct == nil {
		return nil, fmt.Errorf("agentrt: tool %q is not governed (no side-effect class, or not a callable tool of the agent), so it may not run", a.ToolName)
	}
	c := gv.opts.Call(run, a.ToolCallID, a.ToolName, a.Arguments, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		out, err := ct.Call(ctx, in)
		if err != nil {
			return nil, &toolError{err}
		}
		return json.Marshal(out)
	})
	if c.Goal == "" {
		c.Goal = "trpc-agent-go session " + run
	}
	rep, err := gv.g.Reply(ctx, c)
	var te *toolError
	switch {
	case errors.As(err, &te):
		return nil, te.err // the tool's own error, once recorded, as the framework reports it
	case err != nil: // the run ended, or the store or ctx failed: the loop stops
		return nil, fmt.Errorf("%w: %w", agent.NewStopError("agentrt: the run cannot go on"), err)
	case rep.Pending != nil:
		return nil, fmt.Errorf("agentrt: approval %s of run %s is pending: an operator decides it in agentrt, then the call may be made again", rep.Pending.ID, rep.Pending.RunID)
	case rep.Refusal != "":
		return nil, errors.New(rep.Refusal)
	}
	if len(rep.Result) == 0 {
		return &tool.BeforeToolResult{CustomResult: json.RawMessage("null")}, nil
	}
	return &tool.BeforeToolResult{CustomResult: rep.Result}, nil
}

// callable is the agent's tool named name that the framework would call,
// or nil.
func callable(ag agent.Agent, name string) tool.CallableTool {
	if ag == nil {
		return nil
	}
	for _, t := range ag.Tools() {
		if ct, ok := t.(tool.CallableTool); ok && t.Declaration().Name == name {
			return ct
		}
	}
	return nil
}

// toolError marks an error of the framework's own tool, so before tells
// it from the gate's.
type toolError struct{ err error }

func (e *toolError) Error() string { return e.err.Error() }
func (e *toolError) Unwrap() error { return e.err }
