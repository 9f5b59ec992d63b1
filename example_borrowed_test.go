package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// An agent framework owns the loop and its tools: the gate knows them by
// spec only, and each call's body comes from the framework. Two calls of
// one turn arrive at once, each with the framework's call id: the read
// runs while the write waits for an operator; once approved, the write is
// found again by its call id and runs once.
func ExampleGate_frameworkTurn() {
	store, cleanup := exampleStore()
	defer cleanup()

	// The framework's tool declarations, registered by spec only.
	lookup, err := agentrt.FrameworkTool("lookup", "Looks an order up.", nil, agentrt.ReadOnly, time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	refund, err := agentrt.FrameworkTool("refund", "Refunds an order.", nil, agentrt.RemoteMutation, time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{
		Store: store, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{lookup, refund},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	session, _, err := gate.BeginOrAttach(ctx, "invocation-42", "answer the customer", agentrt.FrameworkLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	// The framework's own tool bodies.
	body := func(name string) agentrt.ToolBody {
		return func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"` + name + `":"ok"}`), nil
		}
	}

	// The turn: both calls are opened, then handled side by side.
	calls := []agentrt.Decision{
		{Kind: agentrt.KindToolCall, Tool: "refund", Args: json.RawMessage(`{"order":7}`), CallID: "call_refund"},
		{Kind: agentrt.KindToolCall, Tool: "lookup", Args: json.RawMessage(`{"order":7}`), CallID: "call_lookup"},
	}
	steps := make([]*agentrt.OpenStep, len(calls))
	for i := range calls {
		steps[i], _ = session.Step(ctx)
	}
	verdicts := make([]agentrt.Verdict, len(calls))
	var wg sync.WaitGroup
	for i, d := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			verdicts[i], _ = steps[i].Propose(ctx, d)
			if verdicts[i].Outcome == agentrt.VerdictAllowed {
				_, _ = steps[i].ExecuteFunc(ctx, body(d.Tool))
			}
		}()
	}
	wg.Wait()
	for i, d := range calls {
		fmt.Println(d.CallID, verdicts[i].Outcome)
	}
	fmt.Println("run:", session.Run().Status)

	// An operator approves; the framework was waiting in Await.
	a := verdicts[0].Approval
	if err := (agentrt.Operator{Store: store}).ApproveShown(ctx, a.RunID, a.ID, a.Hash, "alice", "refund it"); err != nil {
		fmt.Println(err)
		return
	}
	decided, err := gate.Await(ctx, a.RunID, a.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("approval:", decided.Status)
	session, _, err = gate.Attach(ctx, "invocation-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	step, _ := session.StepByCallID("call_refund")
	obs, err := step.ExecuteFunc(ctx, body("refund"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("call_refund:", string(obs.Content))
	if err := session.Complete(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", session.Run().Status)
	// Output:
	// call_refund pending
	// call_lookup allowed
	// run: WAITING_FOR_APPROVAL
	// approval: approved
	// call_refund: {"refund":"ok"}
	// run: COMPLETED
}
