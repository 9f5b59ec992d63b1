package genkit

import (
	"context"
	"errors"
	"sync"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// scriptedModel replays a script of model messages through a model defined
// the Genkit way, keeping every request so a test reads the tool responses
// the loop fed back.
type scriptedModel struct {
	mu       sync.Mutex
	script   []*ai.Message
	requests []*ai.ModelRequest
}

func (m *scriptedModel) define(g *genkit.Genkit) ai.Model {
	opts := &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}}
	return genkit.DefineModelAction(g, "scripted/notes", opts,
		func(_ context.Context, req *ai.ModelRequest, _ struct{}, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.requests = append(m.requests, req)
			if len(m.script) == 0 {
				return nil, errors.New("scripted model: the script has no turn left")
			}
			next := m.script[0]
			m.script = m.script[1:]
			return &ai.ModelResponse{Message: next, FinishReason: ai.FinishReasonStop, Request: req}, nil
		})
}

// toolResponses maps call ref to the tool response the model received last.
func (m *scriptedModel) toolResponses() map[string]*ai.ToolResponse {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*ai.ToolResponse{}
	if len(m.requests) == 0 {
		return out
	}
	for _, msg := range m.requests[len(m.requests)-1].Messages {
		for _, p := range msg.Content {
			if p.IsToolResponse() {
				out[p.ToolResponse.Ref] = p.ToolResponse
			}
		}
	}
	return out
}

// callTurn is a model message asking for the given calls at once.
func callTurn(calls ...*ai.ToolRequest) *ai.Message {
	msg := &ai.Message{Role: ai.RoleModel}
	for _, c := range calls {
		msg.Content = append(msg.Content, ai.NewToolRequestPart(c))
	}
	return msg
}

// classes is the tool-class map an adapter is given.
var classes = map[string]agentrt.SideEffect{
	"read_note":   agentrt.ReadOnly,
	"append_note": agentrt.RemoteMutation,
	"drop_note":   agentrt.Destructive,
}

type readArgs struct {
	Name string `json:"name"`
}

type appendArgs struct {
	Text string `json:"text"`
}

// noteTools are real Genkit tools over the shared note: read_note reads
// it, append_note appends a line, drop_note empties it.
type noteTools struct{ *adaptertest.Notes }

func (n noteTools) define(g *genkit.Genkit) []ai.ToolRef {
	read := genkit.DefineTool(g, "read_note", "Reads the note.", func(_ *ai.ToolContext, _ readArgs) (string, error) { return n.Read() })
	write := genkit.DefineTool(g, "append_note", "Appends a line to the note.", func(_ *ai.ToolContext, a appendArgs) (string, error) {
		return "appended", n.Append(a.Text)
	})
	drop := genkit.DefineTool(g, "drop_note", "Deletes the note.", func(_ *ai.ToolContext, _ readArgs) (string, error) {
		return "dropped", n.Delete("drop_note")
	})
	return []ai.ToolRef{read, write, drop}
}
