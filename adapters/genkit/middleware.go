package genkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/firebase/genkit/go/ai"
)

// Options adjust the Middleware. The zero value awaits each approval.
type Options struct {
	// Goal is recorded as the goal of a run the middleware begins; ""
	// means "genkit generate".
	Goal string
	// Limits bound a run the middleware begins; the zero value means
	// agentrt.FrameworkLimits().
	Limits agentrt.Limits
	// Interrupt makes a call that waits on an approval end Generate with
	// Genkit's tool interrupt instead of awaiting the decision. Restart the
	// call (ai.WithToolRestarts) once it is decided: the restart's metadata
	// is ignored, and only the recorded decision lets the tool run.
	Interrupt bool
}

// siblingWait bounds how long a call waits for the other calls of its
// model turn to open their steps (a call whose tool Genkit cannot find
// never arrives).
const siblingWait = time.Second

// errRunWaits: a call came while its run waits on another call's approval.
var errRunWaits = errors.New("genkit: the run waits")

// sessionIdle is how long a run's session outlives its last call.
const sessionIdle = 5 * time.Second

// Middleware governs every tool call of the Generate it is given to
// (ai.WithUse) with g: the run is the one WithRun named, each call is
// proposed with its ref as the call id, an allowed call runs Genkit's tool
// once through OpenStep.ExecuteFunc, and a refused one answers the model
// with {"error": ...} in place of the tool's output. A tool with no class
// in classes never runs. Register the tools with g through Specs.
func Middleware(g *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) ai.Middleware {
	if opts.Goal == "" {
		opts.Goal = "genkit generate"
	}
	if opts.Limits == (agentrt.Limits{}) {
		opts.Limits = agentrt.FrameworkLimits()
	}
	m := &middleware{g: g, classes: maps.Clone(classes), opts: opts, runs: map[string]*run{}}
	return ai.MiddlewareFunc(func(context.Context) (*ai.Hooks, error) {
		t := &turn{}
		return &ai.Hooks{WrapModel: func(ctx context.Context, mp *ai.ModelParams, next ai.ModelNext) (*ai.ModelResponse, error) {
			resp, err := next(ctx, mp)
			t.mu.Lock()
			t.left, t.all = 0, make(chan struct{})
			for _, p := range resp.ToolRequests() {
				if _, ok := m.classes[p.ToolRequest.Name]; ok {
					t.left++
				}
			}
			t.mu.Unlock()
			return resp, err
		}, WrapTool: func(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
			return m.wrap(ctx, t, p, next)
		}}, nil
	})
}

// turn holds a model turn's calls until each has opened its step, so a
// call that needs approval waits alone while its siblings run, instead of
// pausing the run before they are proposed.
type turn struct {
	mu   sync.Mutex
	left int
	all  chan struct{} // nil for a restart, which runs calls without a turn
}

func (t *turn) arrive() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.left--; t.left == 0 && t.all != nil {
		close(t.all)
	}
}

type middleware struct {
	g       *agentrt.Gate
	classes map[string]agentrt.SideEffect
	opts    Options
	mu      sync.Mutex
	runs    map[string]*run
}

// run is one run's session, shared by the calls in flight on it and
// closed sessionIdle after the last of them returns: the next model turn
// reuses it, and no lease outlives a finished Generate for long.
type run struct {
	id      string
	refs    int         // guarded by middleware.mu
	idle    *time.Timer // guarded by middleware.mu
	mu      sync.Mutex
	gs      *agentrt.GateSession
	changed chan struct{} // closed and replaced when a step of the run ends
}

func (m *middleware) hold(id string) (*run, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.runs[id]
	if r == nil {
		r = &run{id: id, changed: make(chan struct{})}
		m.runs[id] = r
	}
	if r.refs++; r.idle != nil {
		r.idle.Stop()
	}
	return r, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if r.refs--; r.refs == 0 {
			r.idle = time.AfterFunc(sessionIdle, func() { m.drop(r) })
		}
	}
}

// drop closes the run's session if no call took it up again.
func (m *middleware) drop(r *run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.refs > 0 || m.runs[r.id] != r {
		return
	}
	delete(m.runs, r.id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gs != nil {
		r.gs.Close()
	}
}

func (m *middleware) wrap(ctx context.Context, t *turn, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
	runID, name := RunID(ctx), p.Request.Name
	if runID == "" {
		return nil, errors.New("genkit: the context names no agentrt run; call Generate with a context from WithRun")
	}
	if _, ok := m.classes[name]; !ok {
		return refusal("agentrt runs no tool without a side-effect class, and %q has none", name), nil
	}
	arrive := sync.OnceFunc(t.arrive)
	defer arrive()
	args, err := json.Marshal(p.Request.Input)
	if err != nil {
		return refusal("the call's input does not encode as JSON: %v", err), nil
	}
	r, release := m.hold(runID)
	defer release()
	o, v, err := m.open(ctx, r, p.Request.Ref, name, args, func() {
		arrive()
		t.mu.Lock()
		all := t.all
		t.mu.Unlock()
		if all != nil {
			select {
			case <-all:
			case <-time.After(siblingWait):
			case <-ctx.Done():
			}
		}
	})
	arrive()
	for err == nil && v.Outcome == agentrt.VerdictPending {
		a := v.Approval
		if m.opts.Interrupt && a.Status == agentrt.ApprovalPending {
			return nil, ai.NewToolInterruptError(map[string]any{"agentrt_run": a.RunID, "agentrt_approval": a.ID})
		}
		if *a, err = m.g.Await(ctx, a.RunID, a.ID); err != nil {
			return nil, err
		}
		if a.Status != agentrt.ApprovalApproved {
			m.session(ctx, r) // the run records the decision and goes on
			return refusal("an operator's approval was needed and the call was %s", a.Status), nil
		}
		var done func()
		r, done = m.hold(a.RunID)
		defer done()
		o, err = m.granted(ctx, r, a.StepID)
		v = agentrt.Verdict{Outcome: agentrt.VerdictAllowed}
	}
	switch {
	case errors.Is(err, errRunWaits):
		return refusal("%v", err), nil
	case err != nil:
		return nil, err
	case v.Outcome == agentrt.VerdictAllowed:
		return execute(ctx, r, o, p, next)
	case v.Outcome == agentrt.VerdictEnded:
		return nil, fmt.Errorf("%w: run %s ended %s", agentrt.ErrRunEnded, runID, v.Run.Status)
	}
	return answer(v.Observation), nil
}

// open collects what is recorded of the call, or proposes it. Collected
// are the call's own step in this run, whatever it came to (a restarted
// Generate or process), and an identical request of any run that an
// operator is deciding or granted (a restarted framework session).
func (m *middleware) open(ctx context.Context, r *run, call, name string, args json.RawMessage, siblings func()) (*agentrt.OpenStep, agentrt.Verdict, error) {
	key, err := agentrt.RequestKey(name, args)
	if err != nil {
		return nil, agentrt.Verdict{}, err
	}
	recs, err := m.g.Lookup(ctx, key, 0)
	if err != nil {
		return nil, agentrt.Verdict{}, err
	}
	for _, rec := range recs {
		st, a := rec.Step, rec.Approval
		own := call != "" && st.RunID == r.id && st.Decision != nil && st.Decision.CallID == call
		switch {
		case a != nil && st.Status == agentrt.StepAwaitingApproval && (own || !a.Status.Decided() || a.Status == agentrt.ApprovalApproved):
			return nil, agentrt.Verdict{Outcome: agentrt.VerdictPending, Approval: a}, nil
		case own && st.Status.InFlight():
			// Cut off by a crash: attaching marks it interrupted and asks
			// an operator; it is never simply called again.
			_, v, err := m.session(ctx, r)
			if err != nil || (v.Approval != nil && v.Approval.StepID == st.ID) {
				return nil, v, err
			}
			return nil, agentrt.Verdict{}, fmt.Errorf("genkit: call %s of run %s is in flight in another session", call, r.id)
		case own:
			return nil, agentrt.Verdict{Observation: st.Observation}, nil
		}
	}
	gs, v, err := m.session(ctx, r)
	if err == nil && v.Outcome == agentrt.VerdictPending {
		err = fmt.Errorf("%w: run %s waits on approval %s of another call; it runs nothing until an operator decides it", errRunWaits, r.id, v.Approval.ID)
	}
	if err != nil {
		return nil, v, err
	}
	st, err := gs.Step(ctx)
	if err != nil || st == nil {
		return nil, agentrt.Verdict{Outcome: agentrt.VerdictEnded, Run: gs.Run()}, err
	}
	siblings()
	v, err = st.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, CallID: call, Tool: name, Args: args})
	return st, v, err
}

// session returns the run's open session, beginning or attaching the run
// when it has none; a run waiting on an approval comes back pending.
func (m *middleware) session(ctx context.Context, r *run) (*agentrt.GateSession, agentrt.Verdict, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gs != nil && !r.gs.Done() {
		return r.gs, agentrt.Verdict{}, nil
	}
	gs, v, err := m.g.BeginOrAttach(ctx, r.id, m.opts.Goal, m.opts.Limits)
	if err == nil {
		r.gs = gs
	}
	return gs, v, err
}

// granted opens the approved step stepID of run r. Attach opens one
// granted step at a time: while another call's is open, it waits for that
// one to end.
func (m *middleware) granted(ctx context.Context, r *run, stepID string) (*agentrt.OpenStep, error) {
	for {
		r.mu.Lock()
		var err error
		if r.gs == nil || r.gs.Done() {
			r.gs, _, err = m.g.Attach(ctx, r.id)
		}
		var cur *agentrt.OpenStep
		if err == nil {
			cur = r.gs.Current()
		}
		changed := r.changed
		r.mu.Unlock()
		switch {
		case err != nil:
			return nil, err
		case cur == nil:
			return nil, fmt.Errorf("genkit: the approved step %s of run %s is not open here; another session ran it or the run moved on", stepID, r.id)
		case cur.ID() == stepID:
			return cur, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// execute runs Genkit's tool as the gate's body for o, with the recorded
// input. The tool's own error (an interrupt included) goes back to Genkit
// as it would without the gate, once the gate recorded it.
func execute(ctx context.Context, r *run, o *agentrt.OpenStep, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
	var res *ai.MultipartToolResponse
	var toolErr error
	obs, err := o.ExecuteFunc(ctx, func(ctx context.Context, recorded json.RawMessage) (json.RawMessage, error) {
		req := *p.Request
		if err := json.Unmarshal(recorded, &req.Input); err != nil {
			return nil, err
		}
		if res, toolErr = next(ctx, &ai.ToolParams{Request: &req, Tool: p.Tool}); toolErr != nil {
			return nil, toolErr
		}
		return json.Marshal(res.Output)
	})
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	if toolErr != nil {
		return nil, toolErr
	}
	if err != nil || res != nil {
		return res, err
	}
	return answer(&obs), nil
}

// answer is what the model reads for a recorded observation.
func answer(obs *agentrt.Observation) *ai.MultipartToolResponse {
	if obs == nil || obs.Failure() {
		var o agentrt.Observation
		if obs != nil {
			o = *obs
		}
		return refusal("agentrt refused the call (%s): %s", o.Kind, strings.TrimSpace(o.Summary+" "+o.FailureMessage))
	}
	var out any
	if json.Unmarshal(obs.Content, &out) != nil {
		out = string(obs.Content)
	}
	return &ai.MultipartToolResponse{Output: out}
}

// refusal is a tool output the model reads as the call's error: Genkit
// fails the whole Generate on a returned error, so it is not one.
func refusal(format string, a ...any) *ai.MultipartToolResponse {
	return &ai.MultipartToolResponse{Output: map[string]any{"error": fmt.Sprintf(format, a...)}}
}
