package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/agentrt/agentrt"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

// Options adjusts Govern; the zero value waits for approvals in
// Gate.Await and begins runs with agentrt.FrameworkLimits. Goal "" means
// "ADK session <run id>". Interrupt makes a call that awaits approval raise
// ADK's own tool confirmation (RequestConfirmation) and end the turn; the
// answer ADK brings back is never taken as the grant: only the approval
// recorded in agentrt is. TurnWait bounds how long a call that is not
// read-only waits for the other calls of its turn to open their steps
// (agentrt.Call.TurnWait): zero means one second, negative no wait (for a
// task runner that runs a turn's calls one after another).
type Options = agentrt.AdapterOptions

// RunID is the agentrt run that holds an ADK session's calls: the app,
// user and session ids, each path-escaped, so a session kept by a durable
// session service keeps its run across restarts.
func RunID(app, user, session string) string {
	return "adk:" + url.PathEscape(app) + "/" + url.PathEscape(user) + "/" + url.PathEscape(session)
}

// Specs are the Gate's tools for ADK tools (agentrt.FrameworkTool),
// registered by spec only (the body stays ADK's tool): name, description
// and JSON schema from the tool's declaration, the side-effect class from
// classes (a tool with none is refused by agentrt.NewGate, naming it), and
// timeout.
func Specs(tools []tool.Tool, classes map[string]agentrt.SideEffect, timeout time.Duration) ([]agentrt.Tool, error) {
	out := make([]agentrt.Tool, 0, len(tools))
	for _, t := range tools {
		var schema any
		if d, ok := t.(interface {
			Declaration() *genai.FunctionDeclaration
		}); ok && d.Declaration() != nil {
			if schema = d.Declaration().ParametersJsonSchema; schema == nil && d.Declaration().Parameters != nil {
				schema = d.Declaration().Parameters
			}
		}
		spec, err := agentrt.FrameworkTool(t.Name(), t.Description(), schema, classes[t.Name()], timeout)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// runnable is what ADK's function tools implement besides tool.Tool.
type runnable interface {
	Run(ctx agent.Context, args any) (map[string]any, error)
}

// Callbacks are an llmagent's hooks into the gate: BeforeTool governs each
// call; AfterModel announces which calls a turn holds (Gate.Turn), so a
// call that waits for an operator does not hold up its siblings.
type Callbacks struct {
	BeforeTool llmagent.BeforeToolCallback
	AfterModel llmagent.AfterModelCallback
}

// Apply adds the callbacks to cfg, after any it has.
func (c Callbacks) Apply(cfg *llmagent.Config) {
	cfg.BeforeToolCallbacks = append(cfg.BeforeToolCallbacks, c.BeforeTool)
	cfg.AfterModelCallbacks = append(cfg.AfterModelCallbacks, c.AfterModel)
}

// Govern returns the callbacks that put every tool call of an llmagent
// under g through Gate.Call. classes names the tools it may run (those
// given to Specs); any other tool's call is refused as a tool error.
func Govern(g *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) Callbacks {
	gv := &governor{g: g, classes: classes, opts: opts}
	return Callbacks{BeforeTool: gv.before, AfterModel: gv.afterModel}
}

type governor struct {
	g       *agentrt.Gate
	classes map[string]agentrt.SideEffect
	opts    Options
}

// afterModel announces the governed calls of a model turn; it leaves the
// response as it is.
func (gv *governor) afterModel(ctx agent.Context, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
	if err != nil || resp == nil || resp.Content == nil || resp.Partial {
		return nil, nil
	}
	var ids []string
	for _, p := range resp.Content.Parts {
		if fc := p.FunctionCall; fc != nil && gv.classes[fc.Name] != "" {
			ids = append(ids, fc.ID)
		}
	}
	gv.g.Turn(RunID(ctx.AppName(), ctx.UserID(), ctx.SessionID()), ids...)
	return nil, nil
}

func (gv *governor) before(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	r, ok := t.(runnable)
	if _, known := gv.classes[t.Name()]; !known || !ok {
		return nil, fmt.Errorf("agentrt: tool %q is not governed (no side-effect class, or not a runnable ADK tool), so it may not run", t.Name())
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("agentrt: the arguments of %q do not encode as JSON: %w", t.Name(), err)
	}
	run := RunID(ctx.AppName(), ctx.UserID(), ctx.SessionID())
	c := gv.opts.Call(run, ctx.FunctionCallID(), t.Name(), raw, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		var a map[string]any
		if err := json.Unmarshal(in, &a); err != nil {
			return nil, err
		}
		out, err := r.Run(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	if c.Goal == "" {
		c.Goal = "ADK session " + run
	}
	rep, err := gv.g.Reply(ctx, c)
	switch p := rep.Pending; {
	case err != nil:
		return nil, err
	case p != nil && ctx.ToolConfirmation() != nil:
		// ADK's answer is not the grant, and ADK asks no second time on a
		// resume: the model reads that the call still waits.
		return nil, fmt.Errorf("agentrt: approval %s of run %s is still pending; ADK's confirmation is not the grant: an operator decides it in agentrt, then the call may be made again", p.ID, p.RunID)
	case p != nil:
		if err := ctx.RequestConfirmation(fmt.Sprintf("agentrt approval %s of run %s: approve it with agentrt, not here", p.ID, p.RunID),
			map[string]any{"run_id": p.RunID, "approval_id": p.ID}); err != nil {
			return nil, err
		}
		return map[string]any{"status": "awaiting approval", "approval_id": p.ID}, nil
	case rep.Refusal != "":
		return nil, errors.New(rep.Refusal)
	}
	var out map[string]any
	if err := json.Unmarshal(rep.Result, &out); err != nil || out == nil {
		out = map[string]any{"result": rep.Result}
	}
	return out, nil
}
