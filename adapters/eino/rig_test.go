package eino

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// approvalPolicy sends local writes to an operator and denies deletes.
var approvalPolicy = agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.LocalMutation: agentrt.RequireApproval,
	agentrt.RemoteMutation: agentrt.RequireApproval, agentrt.Destructive: agentrt.Deny}

// rig is one process's agentrt side: a SQLite runs database, a Gate over
// the note tools' specs, and the middleware.
type rig struct {
	db     string
	store  *sqlite.Store
	gate   *agentrt.Gate
	mw     compose.ToolMiddleware
	outer  *compose.ToolMiddleware // when set, wraps mw
	notes  noteTools
	events adaptertest.Events
	// handlers are the ChatModelAgent's; judged, when set, hears the
	// name of each tool call the policy judges.
	handlers []adk.ChatModelAgentMiddleware
	judged   func(tool string)
}

func newRig(t testing.TB, dir string, opts Options, leaseTTL time.Duration) *rig {
	t.Helper()
	notes, err := adaptertest.NewNotes(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{db: filepath.Join(dir, "runs.db"), notes: noteTools{notes}}
	st, err := sqlite.Open(r.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	tools, err := r.notes.tools()
	if err != nil {
		t.Fatal(err)
	}
	specs, err := Tools(context.Background(), tools, classes, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.gate, err = agentrt.NewGate(agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{
		Store: st, Policy: r.policy(), Tools: specs, LeaseTTL: leaseTTL, Observer: r.events.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	r.mw = Middleware(r.gate, classes, opts)
	t.Cleanup(r.gate.Close)
	return r
}

// policy is approvalPolicy, telling judged first.
func (r *rig) policy() agentrt.Policy {
	return agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		if r.judged != nil {
			r.judged(req.Spec.Name)
		}
		return approvalPolicy.Evaluate(ctx, req, view)
	})
}

// runner is a real ChatModelAgent under a Runner with a checkpoint store,
// its tools governed by the rig's middleware.
func (r *rig) runner(t testing.TB, llm *scriptedModel, cps *memStore) *adk.Runner {
	t.Helper()
	tools, err := r.notes.tools()
	if err != nil {
		t.Fatal(err)
	}
	mws := []compose.ToolMiddleware{r.mw}
	if r.outer != nil {
		mws = []compose.ToolMiddleware{*r.outer, r.mw}
	}
	ag, err := adk.NewChatModelAgent(context.Background(), &adk.ChatModelAgentConfig{
		Name: "writer", Description: "writes notes", Model: llm, Handlers: r.handlers,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools: tools, ToolCallMiddlewares: mws}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return adk.NewRunner(context.Background(), adk.RunnerConfig{Agent: ag, CheckPointStore: cps})
}

// events reads a run's events: the final text, and the ids of the root
// causes of an interrupt (none when it was not interrupted).
func events(iter *adk.AsyncIterator[*adk.AgentEvent]) (string, []string, error) {
	var final string
	var interrupted []string
	for {
		ev, ok := iter.Next()
		if !ok {
			return final, interrupted, nil
		}
		if ev.Err != nil {
			return final, interrupted, ev.Err
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			for _, c := range ev.Action.Interrupted.InterruptContexts {
				if c.IsRootCause {
					interrupted = append(interrupted, c.ID)
				}
			}
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			if m, err := ev.Output.MessageOutput.GetMessage(); err == nil && m.Role == schema.Assistant && m.Content != "" {
				final = m.Content
			}
		}
	}
}

// pending is the run's one pending approval.
func (r *rig) pending(t testing.TB, runID string) agentrt.Approval {
	t.Helper()
	return adaptertest.Pending(t, r.store, runID)
}

// cli runs the real agentrt binary on the rig's database.
func (r *rig) cli(t testing.TB, args ...string) string {
	t.Helper()
	return adaptertest.CLI(t, r.db, args...)
}

func TestMain(m *testing.M) { os.Exit(adaptertest.Main(m)) }
