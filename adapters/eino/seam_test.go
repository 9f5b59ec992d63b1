package eino

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// memStore is an in-memory Eino CheckPointStore.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok, nil
}

func (s *memStore) Set(_ context.Context, id string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = b
	return nil
}

// seen is what the tool middleware observed of one call.
type seen struct {
	tool, callID, args, runKey string
}

// runKey is the session value under which the caller hands the tool
// middleware its durable run key: Eino does not put the checkpoint id in
// the tool's context, but session values given to the Runner reach it.
const runKey = "agentrt.run"

// A real ChatModelAgent under a Runner with a checkpoint store: the scripted
// model asks for a read and a write in one turn, then answers. The
// compose.ToolMiddleware lets the read run and answers the write itself; the
// write never runs, and the model reads both answers.
func TestToolMiddleware_SeesTheCallAndSkipsTheToolWithASubstitute(t *testing.T) {
	ctx := t.Context()
	n := adaptertest.TempNotes(t)
	notes := noteTools{n}
	tools, err := notes.tools()
	if err != nil {
		t.Fatal(err)
	}
	llm := scripted([]*schema.Message{
		callTurn(call("call-read", "read_note", `{"name":"note"}`), call("call-write-1", "append_note", `{"text":"second line"}`)),
		schema.AssistantMessage("done", nil),
	})
	var mu sync.Mutex
	calls := map[string]seen{}
	gate := compose.ToolMiddleware{Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
			key, _ := adk.GetSessionValue(ctx, runKey)
			s, _ := key.(string)
			mu.Lock()
			calls[in.CallID] = seen{in.Name, in.CallID, in.Arguments, s}
			mu.Unlock()
			if classes[in.Name] == agentrt.ReadOnly {
				return next(ctx, in)
			}
			return &compose.ToolOutput{Result: `{"status":"held for approval"}`}, nil
		}
	}}
	ag, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "writer", Description: "writes notes", Model: llm,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools: tools, ToolCallMiddlewares: []compose.ToolMiddleware{gate}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := adk.NewRunner(ctx, adk.RunnerConfig{Agent: ag, CheckPointStore: &memStore{m: map[string][]byte{}}})
	iter := r.Run(ctx, []adk.Message{schema.UserMessage("add a line")},
		adk.WithCheckPointID("ck-1"), adk.WithSessionValues(map[string]any{runKey: "ck-1"}))
	var final string
	for {
		ev, ok := iter.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			if m, err := ev.Output.MessageOutput.GetMessage(); err == nil && m.Role == schema.Assistant && m.Content != "" {
				final = m.Content
			}
		}
	}
	if final != "done" {
		t.Fatalf("the run ended with %q, want the model's final text", final)
	}

	// The middleware saw each call's tool, id, arguments and run key.
	w := calls["call-write-1"]
	var args map[string]string
	if err := json.Unmarshal([]byte(w.args), &args); err != nil || args["text"] != "second line" {
		t.Errorf("the middleware saw arguments %q for call-write-1 (%v)", w.args, err)
	}
	if len(calls) != 2 || w.tool != "append_note" || w.runKey != "ck-1" || calls["call-read"].runKey != "ck-1" {
		t.Errorf("the middleware saw %+v, want both calls with the run key ck-1", calls)
	}

	// The read ran once; the write did not, so the file is as it was.
	n.CheckWriteSkipped(t)
	got := llm.toolMessages()
	if got["call-read"] != `"first line\n"` && got["call-read"] != "first line\n" {
		t.Errorf("the model got %q for call-read, want the file's text", got["call-read"])
	}
	if got["call-write-1"] != `{"status":"held for approval"}` {
		t.Errorf("the model got %q for call-write-1, want the substitute", got["call-write-1"])
	}
}
