package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// GateSession.Propose of an allowed call to a spec-only tool records the
// tool start with the step; Execute (the wrong kind for such a tool) is
// refused with ErrNoToolBody and runs nothing, the step stays started,
// and ExecuteFunc then runs the body once and records the outcome.
func TestGateSession_ProposeThenTheWrongExecuteRunsNothing(t *testing.T) {
	ctx := context.Background()
	st := benchStoreT(t)
	spec := agentrt.SpecOnly(agentrt.ToolSpec{Name: "read", Description: "read", SideEffect: agentrt.ReadOnly, Timeout: time.Minute,
		InputSchema: json.RawMessage(`{"type":"object"}`)})
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{spec}}})
	if err != nil {
		t.Fatal(err)
	}
	gs, step, v, err := g.BeginPropose(ctx, "run-1", "goal", agentrt.FrameworkLimits(), agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", Args: json.RawMessage(`{}`)})
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("BeginPropose: %s, %v", v.Outcome, err)
	}
	defer gs.Close()
	if _, err := step.Execute(ctx); !errors.Is(err, agentrt.ErrNoToolBody) {
		t.Fatalf("Execute of a spec-only tool: %v, want ErrNoToolBody", err)
	}
	if steps := kit.MustSteps(t, st, "run-1"); len(steps) != 1 || steps[0].Status != agentrt.StepExecuting {
		t.Fatalf("after the refused Execute: %+v", steps)
	}
	var n atomic.Int64
	obs, err := step.ExecuteFunc(ctx, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		n.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	})
	if err != nil || obs.Kind != agentrt.ObsToolResult || n.Load() != 1 {
		t.Fatalf("ExecuteFunc: %+v, %v; the body ran %d times", obs, err, n.Load())
	}
	if _, err := step.ExecuteFunc(ctx, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		n.Add(1)
		return nil, nil
	}); err == nil || n.Load() != 1 {
		t.Fatalf("a second ExecuteFunc: %v; the body ran %d times", err, n.Load())
	}
	if steps := kit.MustSteps(t, st, "run-1"); steps[0].Status != agentrt.StepDone {
		t.Fatalf("the step is %s, want done", steps[0].Status)
	}
}
