// Quickstart: an Eino ChatModelAgent whose tool calls an agentrt Gate
// governs. The model is scripted (no network) and the runs database is a
// SQLite file in a temporary directory. The lines marked "agentrt" are all
// a program adds.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/adapters/eino"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

type args struct {
	Name string `json:"name"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "eino-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	greet, _ := utils.InferTool("greet", "Greets someone.", func(_ context.Context, a args) (string, error) {
		fmt.Println("  greet ran for", a.Name)
		return "hello " + a.Name, nil
	})
	wipe, _ := utils.InferTool("wipe", "Deletes everything.", func(context.Context, args) (string, error) {
		fmt.Println("  wipe ran (it should not have)")
		return "wiped", nil
	})
	tools := []tool.BaseTool{greet, wipe}
	// agentrt: the 15 lines a program adds are between the two rules.
	// ---
	classes := map[string]agentrt.SideEffect{"greet": agentrt.ReadOnly, "wipe": agentrt.Destructive}
	specs, err := eino.Tools(ctx, tools, classes, 0)
	store, err2 := sqlite.Open(filepath.Join(dir, "runs.db"))
	rules, err3 := disclosure.New(disclosure.Default()) // secrets in tool results are redacted
	if err := errors.Join(err, err2, err3); err != nil {
		return err
	}
	defer store.Close()
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: store, Policy: agentrt.DefaultPolicy(), Tools: specs, Disclosure: rules}})
	if err != nil {
		return err
	}
	defer gate.Close()
	// ... plus eino.Middleware and eino.Handler in the agent's config and
	// eino.RunOptions(id) on the run, marked below.
	// ---
	llm := &scripted{turns: []*schema.Message{
		schema.AssistantMessage("", []schema.ToolCall{
			{ID: "c1", Function: schema.FunctionCall{Name: "greet", Arguments: `{"name":"Ada"}`}},
			{ID: "c2", Function: schema.FunctionCall{Name: "wipe", Arguments: `{"name":"all"}`}}}),
		schema.AssistantMessage("greeted Ada; wipe was refused", nil),
	}}
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{Name: "greeter", Description: "greets", Model: llm,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools,
			ToolCallMiddlewares: []compose.ToolMiddleware{eino.Middleware(gate, classes, eino.Options{})}}}, // agentrt: the middleware
		Handlers: []adk.ChatModelAgentMiddleware{eino.Handler(gate, classes)}}) // agentrt: the turn's calls
	if err != nil {
		return err
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent})
	iter := runner.Query(ctx, "greet Ada, then wipe", eino.RunOptions("quickstart-1")...) // agentrt: the run id
	for {
		ev, ok := iter.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			return ev.Err
		}
		if m, err := ev.Output.MessageOutput.GetMessage(); err == nil && m.Role == schema.Tool {
			fmt.Printf("the model read for %s: %s\n", m.ToolName, m.Content)
		} else if err == nil && m.Content != "" {
			fmt.Println("the model said:", m.Content)
		}
	}
	if err := gate.Complete(ctx, "quickstart-1", nil); err != nil { // agentrt (optional): end the run
		return err
	}
	steps, err := store.ListSteps(ctx, "quickstart-1")
	if err != nil {
		return err
	}
	for _, st := range steps {
		fmt.Printf("recorded step %d: %s %s -> %s\n", st.Index, st.Decision.Tool, st.Decision.CallID, st.Observation.Kind)
	}
	rep, err := store.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		return errors.Join(errors.New("the record does not verify"), err)
	}
	fmt.Println("the record verifies")
	return nil
}

// scripted answers each request with its next turn.
type scripted struct{ turns []*schema.Message }

func (s *scripted) Generate(context.Context, []*schema.Message, ...model.Option) (*schema.Message, error) {
	if len(s.turns) == 0 {
		return nil, errors.New("the script is over")
	}
	m := s.turns[0]
	s.turns = s.turns[1:]
	return m, nil
}

func (s *scripted) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := s.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (s *scripted) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return s, nil }
