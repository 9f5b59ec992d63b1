package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// A caller that owns its loop proposes each decision through a gate; the
// gate records it, validates it, asks the policy and runs the tool itself.
// A call that needs approval ends the session; once an operator approves,
// Attach hands back the approved step and Execute runs the recorded request.
func ExampleGate() {
	store, cleanup := exampleStore()
	defer cleanup()

	tool := func(name string, se agentrt.SideEffect) agentrt.Tool {
		return agentrt.ToolFunc{
			ToolSpec: agentrt.ToolSpec{Name: name, Description: name + " a person", SideEffect: se, Timeout: time.Second,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
			Fn: func(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
				var a struct{ Name string }
				if err := json.Unmarshal(call.Args, &a); err != nil {
					return agentrt.ToolResult{}, err
				}
				out, _ := json.Marshal(map[string]string{name: a.Name})
				return agentrt.ToolResult{Content: out}, nil
			},
		}
	}
	gate, err := agentrt.NewGate(agentrt.GateConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: agentrt.DefaultPolicy(), // read_only runs; remote_mutation waits for approval
			Tools:  []agentrt.Tool{tool("greet", agentrt.ReadOnly), tool("email", agentrt.RemoteMutation)},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The caller's loop. A real one would ask a model (OpenStep.Model) for
	// each decision; this one follows a plan.
	plan := []agentrt.Decision{
		{Kind: agentrt.KindToolCall, Tool: "greet", Args: json.RawMessage(`{"name":"Ada"}`)},
		{Kind: agentrt.KindToolCall, Tool: "greet", Args: json.RawMessage(`{"name":7}`)},
		{Kind: agentrt.KindToolCall, Tool: "email", Args: json.RawMessage(`{"name":"Ada"}`)},
		{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"greeted":"Ada"}`)},
	}
	ctx := context.Background()
	session, err := gate.Begin(ctx, "example-run", "greet Ada and email her", agentrt.DefaultLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	for next := 0; next < len(plan); {
		step, err := session.Step(ctx)
		if err != nil || step == nil {
			fmt.Println("stopped:", err)
			return
		}
		v, err := step.Propose(ctx, plan[next])
		if err != nil {
			fmt.Println(err)
			return
		}
		next++
		switch v.Outcome {
		case agentrt.VerdictAllowed:
			obs, err := step.Execute(ctx)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("step %d: %s ran: %s\n", step.Index(), v.Request.Spec.Name, obs.Content)
		case agentrt.VerdictDenied:
			fmt.Printf("step %d: denied as %s\n", step.Index(), v.Observation.Kind)
		case agentrt.VerdictPending:
			fmt.Printf("step %d: %s waits for approval (%s)\n", step.Index(), v.Approval.Request.Spec.Name, v.Approval.Kind)
			// An operator, perhaps in another process, approves what
			// they were shown, bound to its hash.
			if err := agentrt.ApproveShown(ctx, store, nil, "example-run", v.Approval.ID, v.Approval.Hash, "ops", "fine"); err != nil {
				fmt.Println(err)
				return
			}
			session, v, err = gate.Attach(ctx, "example-run")
			if err != nil || v.Outcome != agentrt.VerdictAllowed {
				fmt.Println("attach:", v.Outcome, err)
				return
			}
			approved := session.Current()
			obs, err := approved.Execute(ctx)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("step %d: %s ran after approval: %s\n", approved.Index(), v.Request.Spec.Name, obs.Content)
		case agentrt.VerdictEnded:
			fmt.Printf("step %d: run %s with %s\n", step.Index(), v.Run.Status, v.Run.Result)
		}
	}
	session.Close()
	// Output:
	// step 0: greet ran: {"greet":"Ada"}
	// step 1: denied as invalid_decision
	// step 2: email waits for approval (remote_mutation)
	// step 2: email ran after approval: {"email":"Ada"}
	// step 3: run COMPLETED with {"greeted":"Ada"}
}
