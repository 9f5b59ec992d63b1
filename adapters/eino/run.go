package eino

import (
	"context"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/adk"
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

// Options adjust the Middleware; the zero value awaits approvals. Goal ""
// means "eino agent"; Interrupt raises compose.StatefulInterrupt (info:
// Pending) on a pending approval; TurnWait is unused, as the middleware
// never sees the model's response (docs/adapters.md).
type Options = agentrt.AdapterOptions

// Pending is the interrupt info of a call that waits for an operator.
type Pending struct {
	RunID, ApprovalID, Tool, CallID string
}

// Checkpoints encode interrupt info with gob, which must know the type.
func init() { schema.RegisterName[Pending]("agentrt_eino_pending") }
