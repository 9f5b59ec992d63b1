// Command quickstart governs a trpc-agent-go agent with agentrt: a scripted
// model (no network) asks for a read, a write and a delete in one turn; the
// read and the write run, the delete is denied and the model reads why.
// Everything is recorded in a SQLite file in a temporary directory.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/runner"
	"trpc.group/trpc-go/trpc-agent-go/tool"
	"trpc.group/trpc-go/trpc-agent-go/tool/function"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/adapters/trpcagent"
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
	dir, err := os.MkdirTemp("", "agentrt-trpcagent-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tools, err := noteTools(filepath.Join(dir, "note.txt"))
	if err != nil {
		return err
	}
	opts := []llmagent.Option{llmagent.WithModel(&scripted{}), llmagent.WithTools(tools), llmagent.WithEnableParallelTools(true)}

	// --- agentrt: these lines are all a program adds ---
	classes := map[string]agentrt.SideEffect{"read_note": agentrt.ReadOnly, "append_note": agentrt.LocalMutation, "delete_note": agentrt.Destructive}
	store, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	specs, err2 := trpcagent.Specs(tools, classes, time.Minute) // the tools' names, descriptions, schemas
	rules, err3 := disclosure.New(disclosure.Default())         // secrets in tool results are redacted
	if err := errors.Join(err, err2, err3); err != nil {
		return err
	}
	defer store.Close()
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{
		Store: store, Policy: agentrt.DefaultPolicy(), Tools: specs, Disclosure: rules}})
	if err != nil {
		return err
	}
	opts = append(opts, trpcagent.Govern(gate, classes, trpcagent.Options{}).AgentOptions()...)
	// --- end of agentrt ---

	r := runner.NewRunner("notes", llmagent.New("notes", opts...))
	defer r.Close()
	ctx := context.Background()
	events, err := r.Run(ctx, "ada", "s1", model.NewUserMessage("tidy my note"))
	if err != nil {
		return err
	}
	for ev := range events {
		if ev.Response == nil {
			continue
		}
		if ev.Response.Error != nil {
			return errors.New(ev.Response.Error.Message)
		}
		for _, c := range ev.Response.Choices {
			switch m := c.Message; {
			case m.Role == model.RoleTool && strings.Contains(m.Content, "agentrt"):
				fmt.Printf("model reads %s's error: %s\n", m.ToolName, m.Content)
			case m.Role == model.RoleTool:
				fmt.Printf("model reads %s's result\n", m.ToolName)
			case m.Role == model.RoleAssistant && m.Content != "" && !ev.Response.IsPartial:
				fmt.Printf("model says: %s\n", m.Content)
			}
		}
	}
	steps, err := store.ListSteps(ctx, trpcagent.RunID("notes", "ada", "s1"))
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

func (m *scripted) Info() model.Info { return model.Info{Name: "scripted"} }

func (m *scripted) GenerateContent(context.Context, *model.Request) (<-chan *model.Response, error) {
	m.turns++
	msg := model.NewAssistantMessage("done: the note has a new line")
	if m.turns == 1 {
		msg = model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{Type: "function", ID: "call-1", Function: model.FunctionDefinitionParam{Name: "read_note", Arguments: []byte(`{}`)}},
			{Type: "function", ID: "call-2", Function: model.FunctionDefinitionParam{Name: "append_note", Arguments: []byte(`{"text":"tidied"}`)}},
			{Type: "function", ID: "call-3", Function: model.FunctionDefinitionParam{Name: "delete_note", Arguments: []byte(`{}`)}},
		}}
	}
	ch := make(chan *model.Response, 1)
	ch <- &model.Response{Object: model.ObjectTypeChatCompletion, Choices: []model.Choice{{Message: msg}}, Done: true}
	close(ch)
	return ch, nil
}

type none struct{}

type text struct {
	Text string `json:"text"`
}

// noteTools are three trpc-agent-go function tools over one file.
func noteTools(path string) ([]tool.Tool, error) {
	if err := os.WriteFile(path, []byte("first line\n"), 0o600); err != nil {
		return nil, err
	}
	read := function.NewFunctionTool(func(context.Context, none) (text, error) {
		b, err := os.ReadFile(path)
		return text{string(b)}, err
	}, function.WithName("read_note"), function.WithDescription("Reads the note."))
	write := function.NewFunctionTool(func(_ context.Context, a text) (none, error) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return none{}, err
		}
		defer f.Close()
		_, err = f.WriteString(a.Text + "\n")
		return none{}, err
	}, function.WithName("append_note"), function.WithDescription("Appends a line to the note."))
	del := function.NewFunctionTool(func(context.Context, none) (none, error) { return none{}, os.Remove(path) },
		function.WithName("delete_note"), function.WithDescription("Deletes the note."))
	return []tool.Tool{read, write, del}, nil
}
