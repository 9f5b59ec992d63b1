package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// exampleStore opens a database in a fresh directory; cleanup removes both.
func exampleStore() (*sqlite.Store, func()) {
	dir, err := os.MkdirTemp("", "agentrt-example")
	if err != nil {
		log.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		log.Fatal(err)
	}
	return store, func() {
		store.Close()
		os.RemoveAll(dir)
	}
}

const fileSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

// fileTool is an in-memory tool for the examples.
func fileTool(name string, se agentrt.SideEffect, result string) agentrt.ToolFunc {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: name, Description: name + " a file", InputSchema: json.RawMessage(fileSchema),
			SideEffect: se, Timeout: 5 * time.Second},
		Fn: func(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(result), Summary: name + " " + string(call.Args)}, nil
		},
	}
}

// A scripted agent reads a file, sends a malformed request, asks to delete
// the file, and completes. The malformed request and the denied deletion
// become observations, and the run goes on.
func ExampleDriver_Start() {
	ctx := context.Background()
	store, cleanup := exampleStore()
	defer cleanup()

	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read_file", `{"path":"notes.txt"}`, "look first"),
		scripted.ToolCall("read_file", `{"path":7}`, "a malformed request"),
		scripted.ToolCall("delete_file", `{"path":"notes.txt"}`, "tidy up"),
		scripted.Complete(`{"summary":"hello"}`),
	}}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: agentrt.DefaultPolicy(), // read_only allowed, destructive denied
			Tools: []agentrt.Tool{
				fileTool("read_file", agentrt.ReadOnly, `{"text":"hello"}`),
				fileTool("delete_file", agentrt.Destructive, `{}`),
			},
		},
		Agent: agent,
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err := d.Start(ctx, "summarise notes.txt", agentrt.DefaultLimits())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, run.Reason, string(run.Result))
	steps, err := store.ListSteps(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range steps {
		obs := "-"
		if st.Observation != nil {
			obs = string(st.Observation.Kind)
		}
		fmt.Printf("step %d: %s %s -> %s, %s\n", st.Index, st.Decision.Kind, st.Decision.Tool, st.Status, obs)
	}
	// Output:
	// COMPLETED goal_completed {"summary":"hello"}
	// step 0: tool_call read_file -> done, tool_result
	// step 1: tool_call read_file -> failed, invalid_decision
	// step 2: tool_call delete_file -> failed, policy_denied
	// step 3: complete  -> done, -
}

// A remote mutation pauses the run on an approval bound to the request. The
// operator approves what they were shown, and Resume runs the recorded
// request.
func ExampleApproveShown() {
	ctx := context.Background()
	store, cleanup := exampleStore()
	defer cleanup()

	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("upload_file", `{ "path" : "report.pdf" }`, "share the report"),
		scripted.Complete(`{"shared":true}`),
	}}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: agentrt.DefaultPolicy(), // remote_mutation needs approval
			Tools:  []agentrt.Tool{fileTool("upload_file", agentrt.RemoteMutation, `{"url":"https://example.com/r"}`)},
		},
		Agent: agent,
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err := d.StartWithID(ctx, "run-1", "share the report", agentrt.DefaultLimits())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status)

	approvals, err := store.ListApprovals(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	shown := approvals[0]
	fmt.Println(shown.Kind, shown.Status, shown.Request.Spec.Name, string(shown.Request.Args))
	// The operator decides on what they read; the hash binds the decision
	// to it.
	if err := agentrt.ApproveShown(ctx, store, nil, run.ID, shown.ID, shown.Hash, "alice", "looks right"); err != nil {
		log.Fatal(err)
	}
	run, err = d.Resume(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, run.Reason)
	steps, err := store.ListSteps(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(steps[0].Observation.Summary)
	// Output:
	// WAITING_FOR_APPROVAL
	// remote_mutation pending upload_file {"path":"report.pdf"}
	// COMPLETED goal_completed
	// upload_file {"path":"report.pdf"}
}

// Recheck asks today's policy about every decision a run recorded. Under a
// policy that now denies deletions, the one step it allowed is named.
func ExampleRecheck() {
	ctx := context.Background()
	store, cleanup := exampleStore()
	defer cleanup()

	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read_file", `{"path":"a.txt"}`, ""),
		scripted.ToolCall("delete_file", `{"path":"a.txt"}`, ""),
		scripted.Complete(`{}`),
	}}
	then := agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.Destructive: agentrt.Allow}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: then,
			Tools: []agentrt.Tool{
				fileTool("read_file", agentrt.ReadOnly, `{"text":"a"}`),
				fileTool("delete_file", agentrt.Destructive, `{}`),
			},
		},
		Agent: agent,
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err := d.Start(ctx, "clean up", agentrt.DefaultLimits())
	if err != nil {
		log.Fatal(err)
	}

	rep, err := agentrt.Recheck(ctx, store, run.ID, agentrt.DefaultPolicy(), agentrt.RecheckOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range rep.Evaluations {
		fmt.Printf("step %d %s: %s then, %s now: %s\n", ev.StepIndex, ev.Tool, ev.Recorded, ev.Now, ev.Result)
	}
	fmt.Println("same:", rep.Same(), "complete:", rep.Complete())
	// Output:
	// step 0 read_file: allow then, allow now: same
	// step 1 delete_file: allow then, deny now: different
	// same: false complete: true
}

// Money is printed the same way by the CLI and the console: dollars to a
// hundredth of a cent, from integer micros.
func ExampleMicros_Dollars() {
	for _, m := range []agentrt.Micros{50_000, 50_000_000, 1_234, 149, 150, 0, -2_500, math.MinInt64} {
		fmt.Println(m.Dollars())
	}
	// Output:
	// $0.0500
	// $50.0000
	// $0.0012
	// $0.0001
	// $0.0002
	// $0.0000
	// -$0.0025
	// -$9223372036854.7758
}
