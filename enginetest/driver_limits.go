package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// A caller that gives up while a tool runs still gets the tool's outcome
// recorded: a success as a success, a failure caused by the cancellation as
// an interruption whose outcome is unknown. No further step starts.
func caseDriver_CancelledContextAfterToolKeepsTheObservation(t *testing.T, bk *Backend) {
	for _, c := range []struct {
		name   string
		fail   bool
		kind   agentrt.ObservationKind
		status agentrt.StepStatus
		events []kit.E
	}{
		{"tool succeeds", false, agentrt.ObsToolResult, agentrt.StepDone, nil},
		{"tool fails from the cancellation", true, agentrt.ObsInterrupted, agentrt.StepFailed, []kit.E{kit.StepFailed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			write := kit.NewTool("write", agentrt.LocalMutation, kit.PathSchema, func(tctx context.Context, _ agentrt.ToolCall) (agentrt.ToolResult, error) {
				cancel()
				<-tctx.Done()
				if c.fail {
					return agentrt.ToolResult{}, tctx.Err()
				}
				return agentrt.ToolResult{Content: json.RawMessage(`{"wrote":true}`)}, nil
			})
			agent := kit.Script(kit.Call("write", `{"path":"/a"}`), kit.Complete(`{}`))
			d := e.Driver(agent, agentrt.DefaultPolicy(), write)
			run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Start = %v, want context.Canceled", err)
			}
			if write.N() != 1 || agent.N.Load() != 1 {
				t.Fatalf("write ran %d times, agent asked %d; want once each", write.N(), agent.N.Load())
			}
			stored := kit.MustRun(t, e.Store, "run-1")
			if stored.Status != agentrt.RunRunning || run.Status != agentrt.RunRunning {
				t.Fatalf("run is %s (returned %s), want RUNNING for a later Resume", stored.Status, run.Status)
			}
			steps := kit.MustSteps(t, e.Store, "run-1")
			if len(steps) != 1 || steps[0].Status != c.status {
				t.Fatalf("steps = %+v", steps)
			}
			kit.RequireObs(t, steps[0], c.kind)
			if !c.fail && string(steps[0].Observation.Content) != `{"wrote":true}` {
				t.Fatalf("observation = %s", steps[0].Observation.Content)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, c.events)
		})
	}
}

// Consecutive failures, active time and elapsed time each end the run with
// their reason before the next step starts; time spent waiting for an
// approval is not active time, and elapsed time counts it.
func caseDriver_LimitsEndTheRunBeforeTheNextStep(t *testing.T, bk *Backend) {
	ctx := context.Background()
	slowTool := func(e *env, name string, se agentrt.SideEffect) *kit.Counted {
		return kit.NewTool(name, se, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			e.Clock.Advance(4 * time.Second)
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
		})
	}
	byStep := func(ds ...agentrt.Decision) *kit.CountingAgent {
		return &kit.CountingAgent{Inner: agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if in.Steps.Len() < len(ds) {
				return ds[in.Steps.Len()], nil
			}
			return kit.Call("read", fmt.Sprintf(`{"path":"/%d"}`, in.Steps.Len())), nil
		})}
	}
	t.Run("consecutive failures", func(t *testing.T) {
		e := newEnv(t, bk)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		agent := &kit.CountingAgent{Inner: agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			return kit.Call("read", `{"path":1}`), nil
		})}
		run, err := e.Driver(agent, agentrt.DefaultPolicy(), read).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonRepeatedToolFailures)
		if agent.N.Load() != 3 {
			t.Fatalf("agent asked %d times, want 3", agent.N.Load())
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, []kit.E{kit.LimitExceeded, kit.RunFinished})
	})
	t.Run("active time", func(t *testing.T) {
		e := newEnv(t, bk)
		read := slowTool(e, "read", agentrt.ReadOnly)
		agent := byStep()
		run, err := e.Driver(agent, agentrt.DefaultPolicy(), read).StartWithID(ctx, "run-1", "g",
			kit.Limits(func(l *agentrt.Limits) { l.MaxActiveTime = 10 * time.Second }))
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitActiveTime)
		if read.N() != 3 || run.ActiveTime != 12*time.Second {
			t.Fatalf("read ran %d times, active %s; want 3 and 12s", read.N(), run.ActiveTime)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvToolStep, kit.EvToolStep, []kit.E{kit.LimitExceeded, kit.RunFinished})
	})
	t.Run("approval wait is not active time", func(t *testing.T) {
		e := newEnv(t, bk)
		read := slowTool(e, "read", agentrt.ReadOnly)
		send := slowTool(e, "send", agentrt.RemoteMutation)
		agent := byStep(kit.Call("send", `{"path":"/s"}`), kit.Call("read", `{"path":"/r"}`), kit.Complete(`{}`))
		d := e.Driver(agent, agentrt.DefaultPolicy(), read, send)
		run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxActiveTime = 10 * time.Second }))
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v", run.Status, err)
		}
		e.Clock.Advance(time.Hour)
		a := kit.PendingApproval(t, e.Store, "run-1")
		e.approve(t, a, "")
		run = resumeCompletes(t, d, "run-1")
		if run.ActiveTime != 8*time.Second {
			t.Fatalf("active time %s, want 8s: the hour waiting was counted", run.ActiveTime)
		}
	})
	t.Run("elapsed time counts the wait", func(t *testing.T) {
		e := newEnv(t, bk)
		send := slowTool(e, "send", agentrt.RemoteMutation)
		agent := byStep(kit.Call("send", `{"path":"/s"}`), kit.Complete(`{}`))
		d := e.Driver(agent, agentrt.DefaultPolicy(), send)
		run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxElapsedTime = time.Hour }))
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v", run.Status, err)
		}
		e.Clock.Advance(2 * time.Hour)
		a := kit.PendingApproval(t, e.Store, "run-1")
		e.approve(t, a, "")
		run, err = d.Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitElapsedTime)
		if send.N() != 1 || agent.N.Load() != 1 {
			t.Fatalf("send ran %d times, agent asked %d; the approved step runs, no step starts after it", send.N(), agent.N.Load())
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished, kit.LimitExceeded, kit.RunFinished})
	})
}

// A panic in a tool is that tool's error and the loop goes on; a panic in the
// policy fails the run as internal_error and one in the agent as
// agent_error. None takes the process down or runs anything further.
func caseDriver_PanicsAreErrorsOfTheirOwner(t *testing.T, bk *Backend) {
	ctx := context.Background()
	t.Run("tool", func(t *testing.T) {
		e := newEnv(t, bk)
		bad := kit.NewTool("bad", agentrt.ReadOnly, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			panic("tool bug")
		})
		run, err := e.Driver(kit.Script(kit.Call("bad", `{"path":"/a"}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), bad).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsToolError)
		if msg, _ := kit.ObsContent(t, st)["error"].(string); !strings.Contains(msg, "tool bug") {
			t.Fatalf("tool error = %s", st.Observation.Content)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvComplete)
	})
	t.Run("policy", func(t *testing.T) {
		e := newEnv(t, bk)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		policy := agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
			panic("policy bug")
		})
		run, err := e.Driver(kit.Script(kit.Call("read", `{"path":"/a"}`), kit.Complete(`{}`)), policy, read).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
		if read.N() != 0 || !strings.Contains(run.ReasonDetail, "policy bug") {
			t.Fatalf("read ran %d times; detail %q", read.N(), run.ReasonDetail)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepFailed, kit.RunFinished})
	})
	t.Run("agent", func(t *testing.T) {
		e := newEnv(t, bk)
		agent := agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			panic("agent bug")
		})
		run, err := e.Driver(agent, agentrt.DefaultPolicy()).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonAgentError)
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepFailed, kit.RunFinished})
	})
}
