package adk

import (
	"errors"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

// seen is what the before-tool callback observed of one call.
type seen struct {
	tool, callID, invocationID, sessionID string
	args                                  map[string]any
}

// A real llmagent under a runner with the in-memory session service: the
// scripted model asks for a read and a write in one turn, then the write
// again, then answers. The before-tool callback lets the read run, answers
// the first write with a substitute result and the second with an error;
// neither write touches the file, and the model reads both answers.
func TestBeforeToolCallback_SeesTheCallAndSkipsTheToolWithASubstitute(t *testing.T) {
	n := adaptertest.TempNotes(t)
	notes := noteTools{n}
	tools, err := notes.tools()
	if err != nil {
		t.Fatal(err)
	}
	llm := scripted([]*genai.Content{
		callTurn(
			&genai.FunctionCall{ID: "call-read", Name: "read_note", Args: map[string]any{"name": "note"}},
			&genai.FunctionCall{ID: "call-write-1", Name: "append_note", Args: map[string]any{"text": "second line"}},
		),
		callTurn(&genai.FunctionCall{ID: "call-write-2", Name: "append_note", Args: map[string]any{"text": "third line"}}),
		textTurn("done"),
	})
	var mu sync.Mutex
	calls := map[string]seen{}
	errDenied := errors.New("append_note was denied by policy")
	gate := func(ctx agent.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
		mu.Lock()
		calls[ctx.FunctionCallID()] = seen{tl.Name(), ctx.FunctionCallID(), ctx.InvocationID(), ctx.SessionID(), args}
		mu.Unlock()
		switch {
		case classes[tl.Name()] == agentrt.ReadOnly:
			return nil, nil
		case ctx.FunctionCallID() == "call-write-1":
			return map[string]any{"status": "held for approval"}, nil
		default:
			return nil, errDenied
		}
	}
	ag, err := llmagent.New(llmagent.Config{Name: "writer", Model: llm, Tools: tools,
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{gate}})
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.InMemoryService()
	created, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "notes", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "notes", Agent: ag, SessionService: sessions})
	if err != nil {
		t.Fatal(err)
	}
	var final string
	for ev, err := range r.Run(t.Context(), "u1", created.Session.ID(), genai.NewContentFromText("add two lines", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text != "" {
			final = ev.Content.Parts[0].Text
		}
	}
	if final != "done" {
		t.Fatalf("the run ended with %q, want the model's final text", final)
	}

	// The callback saw each call with its tool, id, arguments and the
	// invocation and session the run belongs to.
	if len(calls) != 3 {
		t.Fatalf("the callback saw %d calls, want 3: %v", len(calls), calls)
	}
	w := calls["call-write-1"]
	if w.tool != "append_note" || w.args["text"] != "second line" {
		t.Errorf("the callback saw %+v for call-write-1", w)
	}
	if w.invocationID == "" || w.sessionID != "s1" {
		t.Errorf("the callback saw invocation %q, session %q: want the run's durable ids", w.invocationID, w.sessionID)
	}
	if r := calls["call-read"]; r.invocationID != w.invocationID {
		t.Errorf("the two calls of one turn saw invocations %q and %q", r.invocationID, w.invocationID)
	}

	// The read ran once; no write ran, so the file is as it was.
	n.CheckWriteSkipped(t)

	// The model read the read's result, the substitute, and the error.
	got := responses(llm.lastRequest())
	if got["call-read"] == nil || got["call-read"].Response["text"] != "first line\n" {
		t.Errorf("the model got %+v for call-read, want the file's text", got["call-read"])
	}
	if got["call-write-1"] == nil || got["call-write-1"].Response["status"] != "held for approval" {
		t.Errorf("the model got %+v for call-write-1, want the substitute", got["call-write-1"])
	}
	if got["call-write-2"] == nil || got["call-write-2"].Response["error"] != errDenied.Error() {
		t.Errorf("the model got %+v for call-write-2, want the error text", got["call-write-2"])
	}
}
