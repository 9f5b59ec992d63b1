// Command scripted runs a tiny scripted agent against three in-memory tools on
// an embedded SQLite database, then prints the stored trace and verifies the
// event chain. No network, no keys.
//
// The script reads a note, sends one malformed request (recorded verbatim,
// refused before the policy sees it), asks for a destructive delete (denied
// by the default policy), writes a note, and completes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

func main() {
	db := flag.String("db", "", "database path (default: a new temporary directory)")
	flag.Parse()
	if err := run(*db); err != nil {
		fmt.Fprintln(os.Stderr, "scripted:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	if path == "" {
		dir, err := os.MkdirTemp("", "agentrt-scripted-")
		if err != nil {
			return err
		}
		path = filepath.Join(dir, "agentrt.db")
	}
	store, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer store.Close()

	var mu sync.Mutex
	notes := map[string]string{"todo.txt": "buy milk"}
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`)
	read := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "read_note", Description: "Read a note.", InputSchema: schema, SideEffect: agentrt.ReadOnly, Timeout: time.Second},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			var a struct{ Name string }
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return agentrt.ToolResult{}, err
			}
			mu.Lock()
			defer mu.Unlock()
			text, ok := notes[a.Name]
			if !ok {
				return agentrt.ToolResult{}, fmt.Errorf("no note named %q", a.Name)
			}
			b, _ := json.Marshal(map[string]string{"name": a.Name, "text": text})
			return agentrt.ToolResult{Content: b, Summary: "read " + a.Name}, nil
		},
	}
	write := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "write_note", Description: "Write a note.", SideEffect: agentrt.LocalMutation, Timeout: time.Second,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"text":{"type":"string"}},"required":["name","text"],"additionalProperties":false}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			var a struct{ Name, Text string }
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return agentrt.ToolResult{}, err
			}
			mu.Lock()
			notes[a.Name] = a.Text
			mu.Unlock()
			return agentrt.ToolResult{Content: json.RawMessage(`{"written":true}`), Summary: "wrote " + a.Name}, nil
		},
	}
	deleteAll := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "delete_all", Description: "Delete every note.", SideEffect: agentrt.Destructive, Timeout: time.Second,
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			mu.Lock()
			notes = map[string]string{}
			mu.Unlock()
			return agentrt.ToolResult{Summary: "deleted everything"}, nil
		},
	}
	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read_note", `{"name":"todo.txt"}`, "see what is on the list"),
		scripted.ToolCall("write_note", `{"name": "todo.txt", "text": `, "a reply cut off mid-JSON"),
		scripted.ToolCall("delete_all", `{}`, "start from a clean slate"),
		scripted.ToolCall("write_note", `{"name":"todo.txt","text":"buy milk\nbuy bread"}`, "add bread"),
		scripted.Complete(`{"todo":"buy milk, buy bread"}`),
	}}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  store,
			Policy: agentrt.DefaultPolicy(),
			Tools:  []agentrt.Tool{read, write, deleteAll},
		},
		Agent: agent,
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	r, err := d.Start(ctx, "add bread to the todo list", agentrt.DefaultLimits())
	if err != nil {
		return err
	}
	fmt.Printf("database: %s\nrun %s: %s (%s)\n\n", path, r.ID, r.Status, r.Reason)
	events, err := store.ListEvents(ctx, r.ID)
	if err != nil {
		return err
	}
	w := eventlog.Writer(os.Stdout)
	for _, e := range events {
		w(e)
	}
	rep, err := store.VerifyEvents(ctx, 0, 0)
	if err != nil {
		return err
	}
	if !rep.Intact() {
		return fmt.Errorf("event chain broken at %d: %s", rep.Break.Seq, rep.Break.Detail)
	}
	fmt.Printf("\nverify: %d events intact, head %d:%s\n", rep.Checked, rep.To, rep.Hash)
	return nil
}
