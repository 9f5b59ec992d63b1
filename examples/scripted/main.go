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

	nb := &notebook{notes: map[string]string{"todo.txt": "buy milk"}}
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
			Tools:  nb.tools(),
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
	return printTrail(ctx, store, r.ID)
}

// printTrail prints the run's events and checks the database's chain.
func printTrail(ctx context.Context, store *sqlite.Store, runID string) error {
	events, err := store.ListEvents(ctx, runID)
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

// notebook is the notes the example's tools read, write and delete.
type notebook struct {
	mu    sync.Mutex
	notes map[string]string
}

// tools are read_note, write_note and delete_all.
func (nb *notebook) tools() []agentrt.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`)
	return []agentrt.Tool{
		agentrt.ToolFunc{
			ToolSpec: agentrt.ToolSpec{Name: "read_note", Description: "Read a note.", InputSchema: schema, SideEffect: agentrt.ReadOnly, Timeout: time.Second},
			Fn:       nb.read,
		},
		agentrt.ToolFunc{
			ToolSpec: agentrt.ToolSpec{Name: "write_note", Description: "Write a note.", SideEffect: agentrt.LocalMutation, Timeout: time.Second,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"text":{"type":"string"}},"required":["name","text"],"additionalProperties":false}`)},
			Fn: nb.write,
		},
		agentrt.ToolFunc{
			ToolSpec: agentrt.ToolSpec{Name: "delete_all", Description: "Delete every note.", SideEffect: agentrt.Destructive, Timeout: time.Second,
				InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
			Fn: nb.deleteAll,
		},
	}
}

func (nb *notebook) read(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
	var a struct{ Name string }
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return agentrt.ToolResult{}, err
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	text, ok := nb.notes[a.Name]
	if !ok {
		return agentrt.ToolResult{}, fmt.Errorf("no note named %q", a.Name)
	}
	b, _ := json.Marshal(map[string]string{"name": a.Name, "text": text})
	return agentrt.ToolResult{Content: b, Summary: "read " + a.Name}, nil
}

func (nb *notebook) write(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
	var a struct{ Name, Text string }
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return agentrt.ToolResult{}, err
	}
	nb.mu.Lock()
	nb.notes[a.Name] = a.Text
	nb.mu.Unlock()
	return agentrt.ToolResult{Content: json.RawMessage(`{"written":true}`), Summary: "wrote " + a.Name}, nil
}

func (nb *notebook) deleteAll(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
	nb.mu.Lock()
	nb.notes = map[string]string{}
	nb.mu.Unlock()
	return agentrt.ToolResult{Summary: "deleted everything"}, nil
}
