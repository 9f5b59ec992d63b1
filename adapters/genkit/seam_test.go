package genkit

import (
	"context"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"
)

// seen is what the WrapTool hook observed of one call.
type seen struct {
	tool, ref, flow, runKey string
	input                   map[string]any
}

// A real genkit.Generate inside a flow, with tools and the scripted model:
// the model asks for a read and a write in one turn, then answers. The
// WrapTool hook lets the read run and answers the write itself; the write
// never runs, and the model reads both answers.
func TestWrapTool_SeesTheCallAndSkipsTheToolWithASubstitute(t *testing.T) {
	ctx := t.Context()
	n, err := adaptertest.NewNotes(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := genkit.Init(ctx)
	notes := noteTools{n}
	tools := notes.define(g)
	llm := scripted([]*ai.Message{
		callTurn(&ai.ToolRequest{Ref: "call-read", Name: "read_note", Input: map[string]any{"name": "note"}},
			&ai.ToolRequest{Ref: "call-write-1", Name: "append_note", Input: map[string]any{"text": "second line"}}),
		ai.NewModelTextMessage("done"),
	})
	m := llm.define(g)
	var mu sync.Mutex
	calls := map[string]seen{}
	gate := ai.MiddlewareFunc(func(context.Context) (*ai.Hooks, error) {
		return &ai.Hooks{WrapTool: func(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
			in, _ := p.Request.Input.(map[string]any)
			key, _ := core.FromContext(ctx)["run"].(string)
			mu.Lock()
			calls[p.Request.Ref] = seen{p.Tool.Name(), p.Request.Ref, core.FlowNameFromContext(ctx), key, in}
			mu.Unlock()
			if classes[p.Tool.Name()] == agentrt.ReadOnly {
				return next(ctx, p)
			}
			return &ai.MultipartToolResponse{Output: map[string]any{"status": "held for approval"}}, nil
		}}, nil
	})
	flow := genkit.DefineFlow(g, "write-notes", func(ctx context.Context, prompt string) (string, error) {
		resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt(prompt), ai.WithTools(tools...), ai.WithUse(gate))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
	final, err := flow.Run(core.WithActionContext(ctx, core.ActionContext{"run": "session-1"}), "add a line")
	if err != nil {
		t.Fatal(err)
	}
	if final != "done" {
		t.Fatalf("the run ended with %q, want the model's final text", final)
	}

	// The hook saw each call's tool, ref, input, flow and run key.
	w := calls["call-write-1"]
	if len(calls) != 2 || w.tool != "append_note" || w.input["text"] != "second line" {
		t.Errorf("the hook saw %+v", calls)
	}
	if w.flow != "write-notes" || w.runKey != "session-1" || calls["call-read"].runKey != "session-1" {
		t.Errorf("the hook saw flow %q and run key %q, want write-notes and session-1", w.flow, w.runKey)
	}

	// The read ran once; the write did not, so the file is as it was.
	n.CheckWriteSkipped(t)
	got := llm.toolResponses()
	if r := got["call-read"]; r == nil || r.Output != "first line\n" {
		t.Errorf("the model got %+v for call-read, want the file's text", r)
	}
	if r := got["call-write-1"]; r == nil || r.Output.(map[string]any)["status"] != "held for approval" {
		t.Errorf("the model got %+v for call-write-1, want the substitute", r)
	}
}
