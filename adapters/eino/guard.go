package eino

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// RunKey is the adk session value the middleware reads its run id from.
const RunKey = "agentrt.run"

type runIDKey struct{}

// RunOptions are the Runner options of run runID: the checkpoint id and
// the session value the middleware reads, one id for both. Pass them to
// Runner.Run and again to Runner.Resume.
func RunOptions(runID string) []adk.AgentRunOption {
	return []adk.AgentRunOption{adk.WithCheckPointID(runID), adk.WithSessionValues(map[string]any{RunKey: runID})}
}

// WithRunID names the run for a compose graph invoked without an adk
// Runner; the adk session value wins where both are set.
func WithRunID(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runIDKey{}, runID)
}

func runIDFrom(ctx context.Context) string {
	if v, ok := adk.GetSessionValue(ctx, RunKey); ok {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	s, _ := ctx.Value(runIDKey{}).(string)
	return s
}

// Options adjust a Guard. The zero value waits for approvals.
type Options struct {
	// Goal is recorded on a run the guard begins; zero means "eino agent".
	Goal string
	// Limits bound a run the guard begins; zero means agentrt.FrameworkLimits().
	Limits agentrt.Limits
	// Interrupt raises compose.StatefulInterrupt (info: Pending) on a
	// pending approval instead of waiting in Gate.Await.
	Interrupt bool
}

// Pending is the interrupt info of a call that waits for an operator.
type Pending struct {
	RunID, ApprovalID, Tool, CallID string
}

// Checkpoints encode interrupt info with gob, which must know the type.
func init() { schema.RegisterName[Pending]("agentrt_eino_pending") }

// Guard governs the tool calls of Eino runs through one Gate (Gate.Call).
type Guard struct {
	g    *agentrt.Gate
	opts Options
}

// New returns a guard over gate. classes is the map given to Tools; the
// gate's registered specs carry each class, so the guard keeps none.
func New(gate *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) *Guard {
	if opts.Goal == "" {
		opts.Goal = "eino agent"
	}
	return &Guard{g: gate, opts: opts}
}

// Close releases the sessions the gate holds on runs (Gate.Close); the
// runs stay as they are.
func (m *Guard) Close() { m.g.Close() }

// Complete ends run runID COMPLETED with result once its agent is done.
func (m *Guard) Complete(ctx context.Context, runID string, result json.RawMessage) error {
	return m.g.Complete(ctx, runID, result)
}

// call governs one tool call. run is the framework's own tool; it runs
// only through the gate, so at most once and after its start is recorded.
// The model reads the recorded result, the tool's own error as Eino would
// have had it, or a substitute saying why not.
func (m *Guard) call(ctx context.Context, in *compose.ToolInput, run func(context.Context, *compose.ToolInput) (string, error)) (string, error) {
	runID := runIDFrom(ctx)
	if runID == "" {
		return "", errors.New("agentrt/eino: the call has no run id: start the run with eino.RunOptions(id)... or a context from eino.WithRunID")
	}
	var toolErr error
	res, err := m.g.Call(ctx, agentrt.Call{RunID: runID, Goal: m.opts.Goal, Limits: m.opts.Limits, CallID: in.CallID,
		Tool: in.Name, Args: json.RawMessage(in.Arguments), NoWait: m.opts.Interrupt,
		Body: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			c := *in
			c.Arguments = string(args)
			text, err := run(ctx, &c)
			if toolErr = err; err != nil {
				return nil, err
			}
			return json.Marshal(text)
		}})
	switch {
	case toolErr != nil:
		return "", toolErr
	case errors.Is(err, agentrt.ErrCallRefused):
		return substitute(err.Error()), nil
	case err != nil:
		return "", err
	case res.Pending != nil:
		p := Pending{RunID: res.Pending.RunID, ApprovalID: res.Pending.ID, Tool: in.Name, CallID: in.CallID}
		return "", compose.StatefulInterrupt(ctx, p, res.Pending.ID)
	}
	obs := res.Observation
	if !obs.Failure() {
		var s string
		if json.Unmarshal(obs.Content, &s) == nil {
			return s, nil
		}
		return string(obs.Content), nil
	}
	msg := string(obs.Kind)
	for _, s := range []string{obs.Summary, obs.FailureMessage} {
		if s != "" {
			msg += ": " + s
		}
	}
	return substitute(msg), nil
}

func substitute(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": "agentrt: " + msg})
	return string(b)
}
