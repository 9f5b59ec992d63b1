// Quickstart: a Firebase Genkit Generate whose tool calls an agentrt Gate
// governs. The model is scripted (no network) and the runs database is a
// SQLite file in a temporary directory. The lines marked "agentrt" are all
// a program adds; the operator goroutine stands in for a person running
// `agentrt approve`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt"
	agentgenkit "github.com/agentrt/agentrt/adapters/genkit"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

type note struct {
	Text string `json:"text"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "genkit-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	g := genkit.Init(ctx)
	lines := []string{"call the bank"}
	read := genkit.DefineTool(g, "read_note", "Reads the note.", func(_ *ai.ToolContext, _ struct{}) ([]string, error) {
		return lines, nil
	})
	write := genkit.DefineTool(g, "append_note", "Appends a line to the note.", func(_ *ai.ToolContext, n note) (string, error) {
		lines = append(lines, n.Text)
		fmt.Println("append_note ran:", n.Text)
		return "appended", nil
	})
	drop := genkit.DefineTool(g, "drop_note", "Deletes the note.", func(_ *ai.ToolContext, _ struct{}) (string, error) {
		lines = nil
		return "dropped", nil
	})
	model := scriptedModel(g)

	store, err := sqlite.Open(filepath.Join(dir, "runs.db")) // agentrt
	rules, err2 := disclosure.New(disclosure.Default())      // agentrt: secrets in tool results are redacted
	if err := errors.Join(err, err2); err != nil {           // agentrt
		return err // agentrt
	} // agentrt
	defer store.Close()                                                                                                                                  // agentrt
	classes := map[string]agentrt.SideEffect{"read_note": agentrt.ReadOnly, "append_note": agentrt.RemoteMutation, "drop_note": agentrt.Destructive}     // agentrt
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: store, Policy: agentrt.DefaultPolicy(), Disclosure: rules, // agentrt
		Tools: agentgenkit.Specs(classes, read, write, drop), Observer: operator(store)}}) // agentrt
	if err != nil { // agentrt
		return err // agentrt
	} // agentrt

	resp, err := genkit.Generate(agentgenkit.WithRun(ctx, "notes-1"), g, // agentrt: the run id
		ai.WithModel(model), ai.WithPrompt("keep the note"), ai.WithTools(read, write, drop),
		ai.WithUse(agentgenkit.Middleware(gate, classes, agentgenkit.Options{}))) // agentrt
	if err != nil {
		return err
	}
	for _, m := range resp.History() {
		for _, p := range m.Content {
			if p.IsToolResponse() {
				fmt.Printf("the model read for %s: %v\n", p.ToolResponse.Name, p.ToolResponse.Output)
			}
		}
	}
	fmt.Println("the model said:", resp.Text())
	return nil
}

// operator approves each approval once the run waits on it, as a person
// would with `agentrt approve`, and says so. A run whose other calls are
// still running is not waiting yet: it waits (run.waiting) when they end.
func operator(store agentrt.Store) agentrt.Observer {
	return func(e agentrt.Event) {
		if e.Type != agentrt.EventApprovalRequest && e.Type != agentrt.EventRunWaiting {
			return
		}
		go func() {
			apps, err := store.ListApprovals(context.Background(), e.RunID)
			for _, a := range apps {
				if err == nil && a.Status == agentrt.ApprovalPending {
					err = agentrt.Operator{Store: store}.ApproveShown(context.Background(), a.RunID, a.ID, a.Hash, "operator", "fine")
					if err == nil {
						fmt.Printf("operator approved %s %s\n", a.Request.Spec.Name, a.Request.Args)
					}
				}
			}
			if err != nil && !errors.Is(err, agentrt.ErrRunState) {
				fmt.Println("operator:", err)
			}
		}()
	}
}

// scriptedModel asks for a read, a write and a delete in one turn, then
// answers with text.
func scriptedModel(g *genkit.Genkit) ai.Model {
	turns := []*ai.Message{{Role: ai.RoleModel, Content: []*ai.Part{
		ai.NewToolRequestPart(&ai.ToolRequest{Ref: "1", Name: "read_note", Input: map[string]any{}}),
		ai.NewToolRequestPart(&ai.ToolRequest{Ref: "2", Name: "append_note", Input: map[string]any{"text": "buy milk"}}),
		ai.NewToolRequestPart(&ai.ToolRequest{Ref: "3", Name: "drop_note", Input: map[string]any{}}),
	}}, ai.NewModelTextMessage("noted")}
	opts := &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}}
	return genkit.DefineModelAction(g, "scripted/quickstart", opts,
		func(_ context.Context, req *ai.ModelRequest, _ struct{}, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			next := turns[0]
			turns = turns[1:]
			return &ai.ModelResponse{Message: next, FinishReason: ai.FinishReasonStop, Request: req}, nil
		})
}
