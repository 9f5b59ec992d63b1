package genkit

import (
	"context"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// scriptedModel replays a script of model messages through a model defined
// the Genkit way, keeping every request so a test reads the tool responses
// the loop fed back.
type scriptedModel struct {
	adaptertest.Script[*ai.ModelRequest, *ai.Message]
}

func scripted(turns []*ai.Message) *scriptedModel {
	return &scriptedModel{adaptertest.NewScript[*ai.ModelRequest](turns)}
}

func (m *scriptedModel) define(g *genkit.Genkit) ai.Model {
	opts := &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}}
	return genkit.DefineModelAction(g, "scripted/notes", opts,
		func(_ context.Context, req *ai.ModelRequest, _ struct{}, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			next, err := m.Next(req)
			if err != nil {
				return nil, err
			}
			return &ai.ModelResponse{Message: next, FinishReason: ai.FinishReasonStop, Request: req}, nil
		})
}

// toolResponses maps call ref to the tool response the model received last.
func (m *scriptedModel) toolResponses() map[string]*ai.ToolResponse {
	reqs, out := m.Requests(), map[string]*ai.ToolResponse{}
	if len(reqs) == 0 {
		return out
	}
	for _, msg := range reqs[len(reqs)-1].Messages {
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

// classes is the tool-class map an adapter is given: the shared one
// (read_note runs at once, the Gate holds append_note) and drop_note,
// which the default policy denies.
var classes = func() map[string]agentrt.SideEffect {
	c := adaptertest.Classes()
	c["drop_note"] = agentrt.Destructive
	return c
}()

// noteTools are real Genkit tools over the shared note: read_note reads
// it, append_note appends a line, drop_note empties it.
type noteTools struct{ *adaptertest.Notes }

func (n noteTools) define(g *genkit.Genkit) []ai.ToolRef {
	read := genkit.DefineTool(g, "read_note", "Reads the note.", func(_ *ai.ToolContext, _ adaptertest.ReadArgs) (string, error) { return n.Read() })
	write := genkit.DefineTool(g, "append_note", "Appends a line to the note.", func(_ *ai.ToolContext, a adaptertest.AppendArgs) (string, error) {
		return "appended", n.Append(a.Text)
	})
	drop := genkit.DefineTool(g, "drop_note", "Deletes the note.", func(_ *ai.ToolContext, _ adaptertest.ReadArgs) (string, error) {
		return "dropped", n.Delete("drop_note")
	})
	return []ai.ToolRef{read, write, drop}
}
