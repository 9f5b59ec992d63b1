// Command quickstart governs a Google ADK agent with agentrt: a scripted
// model (no network) asks for a read, a write and a delete in one turn; the
// read and the write run, the delete is denied and the model reads why.
// Everything is recorded in a SQLite file in a temporary directory.
package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/adapters/adk"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/sqlite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "agentrt-adk-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tools, err := noteTools(filepath.Join(dir, "note.txt"))
	if err != nil {
		return err
	}
	cfg := llmagent.Config{Name: "notes", Model: &scripted{}, Tools: tools}

	// --- agentrt: these lines are all a program adds ---
	classes := map[string]agentrt.SideEffect{"read_note": agentrt.ReadOnly, "append_note": agentrt.LocalMutation, "delete_note": agentrt.Destructive}
	store, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	specs, err2 := adk.Specs(tools, classes, time.Minute) // the ADK tools' names, descriptions, schemas
	rules, err3 := disclosure.New(disclosure.Default())   // secrets in tool results are redacted
	if err := errors.Join(err, err2, err3); err != nil {
		return err
	}
	defer store.Close()
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{
		Store: store, Policy: agentrt.DefaultPolicy(), Tools: specs, Disclosure: rules}})
	if err != nil {
		return err
	}
	adk.Govern(gate, classes, adk.Options{}).Apply(&cfg)
	// --- end of agentrt ---

	ag, err := llmagent.New(cfg)
	if err != nil {
		return err
	}
	sessions := session.InMemoryService()
	ctx := context.Background()
	if _, err := sessions.Create(ctx, &session.CreateRequest{AppName: "notes", UserID: "ada", SessionID: "s1"}); err != nil {
		return err
	}
	r, err := runner.New(runner.Config{AppName: "notes", Agent: ag, SessionService: sessions})
	if err != nil {
		return err
	}
	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("tidy my note", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return err
		}
		for _, p := range ev.Content.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Response["error"] != nil {
				fmt.Printf("model reads %s's error: %v\n", fr.Name, fr.Response["error"])
			} else if fr != nil {
				fmt.Printf("model reads %s's result\n", fr.Name)
			} else if p.Text != "" {
				fmt.Printf("model says: %s\n", p.Text)
			}
		}
	}
	steps, err := store.ListSteps(ctx, adk.RunID("notes", "ada", "s1"))
	if err != nil {
		return err
	}
	slices.SortFunc(steps, func(a, b agentrt.Step) int { return strings.Compare(a.Decision.CallID, b.Decision.CallID) })
	for _, st := range steps {
		fmt.Printf("agentrt recorded %s: %s %s\n", st.Decision.CallID, st.Decision.Tool, st.Observation.Kind)
	}
	return nil
}

// scripted is a model that asks for three calls in one turn, then answers.
type scripted struct{ turns int }

func (m *scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.turns++
		c := genai.NewContentFromText("done: the note has a new line", genai.RoleModel)
		if m.turns == 1 {
			c = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "read_note", Args: map[string]any{}}},
				{FunctionCall: &genai.FunctionCall{ID: "call-2", Name: "append_note", Args: map[string]any{"text": "tidied"}}},
				{FunctionCall: &genai.FunctionCall{ID: "call-3", Name: "delete_note", Args: map[string]any{}}},
			}}
		}
		yield(&model.LLMResponse{Content: c, TurnComplete: true}, nil)
	}
}

type none struct{}

type text struct {
	Text string `json:"text"`
}

// noteTools are three ADK function tools over one file.
func noteTools(path string) ([]tool.Tool, error) {
	if err := os.WriteFile(path, []byte("first line\n"), 0o600); err != nil {
		return nil, err
	}
	read, err := functiontool.New(functiontool.Config{Name: "read_note", Description: "Reads the note."},
		func(agent.Context, none) (text, error) { b, err := os.ReadFile(path); return text{string(b)}, err })
	if err != nil {
		return nil, err
	}
	write, err := functiontool.New(functiontool.Config{Name: "append_note", Description: "Appends a line to the note."},
		func(_ agent.Context, a text) (none, error) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return none{}, err
			}
			defer f.Close()
			_, err = f.WriteString(a.Text + "\n")
			return none{}, err
		})
	if err != nil {
		return nil, err
	}
	del, err := functiontool.New(functiontool.Config{Name: "delete_note", Description: "Deletes the note."},
		func(agent.Context, none) (none, error) { return none{}, os.Remove(path) })
	if err != nil {
		return nil, err
	}
	return []tool.Tool{read, write, del}, nil
}
