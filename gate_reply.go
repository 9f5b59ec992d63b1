package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// What every framework adapter does around Gate.Call, said once: the
// spec of a tool the framework declares, and the three answers a
// pre-tool hook gives its framework.

// DefaultFrameworkToolTimeout bounds one call of a tool FrameworkTool
// registers with a zero timeout.
const DefaultFrameworkToolTimeout = 10 * time.Minute

// FrameworkTool registers by spec only (SpecOnly) a tool a framework
// declares: its name, description, input schema (any value that encodes
// as a JSON Schema; nil, or one that encodes as null, means
// {"type":"object"}) and side-effect class. An empty class is left empty,
// so NewGate refuses the tool, naming it. timeout zero means
// DefaultFrameworkToolTimeout.
func FrameworkTool(name, description string, schema any, class SideEffect, timeout time.Duration) (Tool, error) {
	in := json.RawMessage(`{"type":"object"}`)
	if schema != nil {
		b, err := json.Marshal(schema)
		if err != nil {
			return nil, fmt.Errorf("agentrt: the input schema of tool %q does not encode as JSON: %w", name, err)
		}
		if string(b) != "null" {
			in = b
		}
	}
	if timeout == 0 {
		timeout = DefaultFrameworkToolTimeout
	}
	return SpecOnly(ToolSpec{Name: name, Description: description, InputSchema: in, SideEffect: class, Timeout: timeout}), nil
}

// AdapterOptions are what a framework adapter's user sets for the calls
// it hands to the gate. The zero value awaits each approval and begins
// runs with FrameworkLimits.
type AdapterOptions struct {
	// Goal is recorded on a run the adapter begins; "" means the
	// adapter's own.
	Goal string
	// Limits bound a run the adapter begins; zero means FrameworkLimits().
	Limits Limits
	// Interrupt makes a call that needs approval raise the framework's own
	// interrupt (Call.NoWait) instead of awaiting the decision. What the
	// framework brings back on its resume is never the grant: only the
	// approval recorded in agentrt is.
	Interrupt bool
	// TurnWait is Call.TurnWait.
	TurnWait time.Duration
}

// Call is the Call of one tool call of run runID under o.
func (o AdapterOptions) Call(runID, callID, tool string, args json.RawMessage, body ToolBody) Call {
	return Call{RunID: runID, Goal: o.Goal, Limits: o.Limits, CallID: callID, Tool: tool, Args: args, Body: body,
		NoWait: o.Interrupt, TurnWait: o.TurnWait}
}

// Reply is what Gate.Reply came to, as a framework's pre-tool hook hands
// it on: exactly one field is set.
type Reply struct {
	// Result is the recorded result (JSON) of a call that ran and
	// succeeded, now or in an earlier process.
	Result json.RawMessage
	// Refusal says why the model gets no result: a denial, a rejected or
	// expired approval, a failure the record holds, a call the gate
	// refused. The model reads it as the tool's error.
	Refusal string
	// Pending is the approval a NoWait call waits on: the framework's
	// interrupt carries it.
	Pending *Approval
}

// ErrorJSON is the refusal as the object {"error": Refusal}: the
// substitute result for a framework that fails its whole run on a hook's
// error (Eino, Genkit).
func (r Reply) ErrorJSON() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": r.Refusal}) // a string always encodes
	return b
}

// Reply is Call for a framework's hook. A tool the gate has no spec for
// (one the adapter was given no class for) is refused without a step. An error the framework's own tool
// (c.Body) returned in this call is handed back as it is, once recorded,
// so the framework sees its tool's error (an interrupt of its own
// included) as it would without the gate. A run that ended is an error
// (ErrRunEnded): the framework's loop should stop rather than call its
// model again. Any other refusal (ErrCallRefused) is Reply.Refusal, not
// an error; other errors are the store's or ctx's.
func (g *Gate) Reply(ctx context.Context, c Call) (Reply, error) {
	if g.e.tools[c.Tool] == nil {
		return Reply{Refusal: fmt.Sprintf("agentrt runs no tool without a side-effect class, and %q has none", c.Tool)}, nil
	}
	var mu sync.Mutex // a body abandoned at its timeout may return late
	var bodyErr error
	if body := c.Body; body != nil {
		c.Body = func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			out, err := body(ctx, args)
			mu.Lock()
			defer mu.Unlock()
			bodyErr = err
			return out, err
		}
	}
	res, err := g.Call(ctx, c)
	mu.Lock()
	defer mu.Unlock()
	obs := res.Observation
	switch {
	case bodyErr != nil:
		return Reply{}, bodyErr
	case errors.Is(err, ErrRunEnded) || err != nil && !errors.Is(err, ErrCallRefused):
		return Reply{}, err
	case err != nil:
		return Reply{Refusal: err.Error()}, nil
	case res.Pending != nil:
		return Reply{Pending: res.Pending}, nil
	case obs.Failure():
		why := []string{"agentrt: " + string(obs.Kind)}
		for _, s := range []string{obs.Summary, obs.FailureMessage} {
			if s != "" {
				why = append(why, s)
			}
		}
		return Reply{Refusal: strings.Join(why, ": ")}, nil
	}
	return Reply{Result: obs.Content}, nil
}
