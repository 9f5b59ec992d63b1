// Command readme is the README's first example, exactly as the README
// shows it (readme_test.go at the repository root keeps the two equal and
// runs it): a run that reads a file, pauses for approval of an upload, is
// approved on the hash the operator was shown, and resumes.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

func main() {
	ctx := context.Background()
	store, err := sqlite.Open("agentrt.db")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// Tools say what they touch; the policy judges by that. A real tool
	// reads and uploads; these answer from memory.
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	tool := func(name string, se agentrt.SideEffect, result string) agentrt.Tool {
		return agentrt.ToolFunc{
			ToolSpec: agentrt.ToolSpec{Name: name, Description: name, InputSchema: schema, SideEffect: se, Timeout: 5 * time.Second},
			Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
				return agentrt.ToolResult{Content: json.RawMessage(result)}, nil
			},
		}
	}
	// The agent decides each step. A model agent asks a model (see
	// providers/); this one replays a script.
	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read_file", `{"path":"notes.txt"}`, "look first"),
		scripted.ToolCall("upload_file", `{"path":"notes.txt"}`, "share it"),
		scripted.Complete(`{"shared":true}`),
	}}
	engine := agentrt.EngineConfig{
		Store: store,
		// DefaultPolicy: read_only and local_mutation run without approval,
		// remote_mutation waits for approval, destructive is denied.
		Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{
			tool("read_file", agentrt.ReadOnly, `{"text":"hello"}`),
			tool("upload_file", agentrt.RemoteMutation, `{"url":"https://example.com/notes"}`),
		},
	}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: engine, Agent: agent})
	if err != nil {
		log.Fatal(err)
	}
	run, err := d.Start(ctx, "share the notes", agentrt.DefaultLimits())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status) // WAITING_FOR_APPROVAL

	// An operator reads the pending approval and decides on what they read:
	// the hash they were shown binds the decision to that exact request.
	approvals, err := store.ListApprovals(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	shown := approvals[0]
	fmt.Println(shown.Request.Spec.Name, string(shown.Request.Args))
	if err := agentrt.ApproveShown(ctx, store, nil, run.ID, shown.ID, shown.Hash, "alice", "looks right"); err != nil {
		log.Fatal(err)
	}
	run, err = d.Resume(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, string(run.Result)) // COMPLETED {"shared":true}
}
