package eino

import (
	"context"
	"maps"

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
// Pending) on a pending approval; TurnWait bounds how long a call of a
// turn the Handler announced waits for its siblings.
type Options = agentrt.AdapterOptions

// Handler is the adk.ChatModelAgent handler (ChatModelAgentConfig.Handlers)
// that announces each model response's calls of the tools classes names
// to gate (Gate.Turn), under the run id and call ids the Middleware uses:
// a call that needs approval then waits for its siblings to open their
// steps, and waits alone while they run. Give it Middleware's classes. A
// ToolsNode run without a ChatModelAgent has no such hook and goes without.
func Handler(gate *agentrt.Gate, classes map[string]agentrt.SideEffect) adk.ChatModelAgentMiddleware {
	return &turns{&adk.BaseChatModelAgentMiddleware{}, gate, maps.Clone(classes)}
}

type turns struct {
	*adk.BaseChatModelAgentMiddleware
	gate    *agentrt.Gate
	classes map[string]agentrt.SideEffect
}

// AfterModelRewriteState finds the response as the state's last message.
func (h *turns) AfterModelRewriteState(ctx context.Context, st *adk.ChatModelAgentState, _ *adk.ModelContext) (context.Context, *adk.ChatModelAgentState, error) {
	if n, runID := len(st.Messages), runIDFrom(ctx); n > 0 && st.Messages[n-1] != nil && runID != "" {
		var ids []string
		for _, c := range st.Messages[n-1].ToolCalls {
			if _, ok := h.classes[c.Function.Name]; ok {
				ids = append(ids, c.ID)
			}
		}
		h.gate.Turn(runID, ids...)
	}
	return ctx, st, nil
}

// Pending is the interrupt info of a call that waits for an operator.
type Pending struct {
	RunID, ApprovalID, Tool, CallID string
}

// Checkpoints encode interrupt info with gob, which must know the type.
func init() { schema.RegisterName[Pending]("agentrt_eino_pending") }
