package trpcagent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/testkit/adaptertest"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/tool"
	"trpc.group/trpc-go/trpc-agent-go/tool/function"
)

// scriptedModel is a trpc-agent-go model.Model that answers each request
// with the next message of its script, and keeps every request it was
// sent, so a test reads what the loop fed back to the model (the tool
// messages).
type scriptedModel struct {
	adaptertest.Script[*model.Request, model.Message]
}

func scripted(turns []model.Message) *scriptedModel {
	return &scriptedModel{adaptertest.NewScript[*model.Request](turns)}
}

func (m *scriptedModel) Info() model.Info { return model.Info{Name: "scripted"} }

func (m *scriptedModel) GenerateContent(_ context.Context, req *model.Request) (<-chan *model.Response, error) {
	next, err := m.Next(req)
	if err != nil {
		return nil, err
	}
	ch := make(chan *model.Response, 1)
	ch <- &model.Response{Object: model.ObjectTypeChatCompletion, Choices: []model.Choice{{Message: next}}, Done: true}
	close(ch)
	return ch, nil
}

// lastRequest is the last request the model was sent.
func (m *scriptedModel) lastRequest() *model.Request {
	reqs := m.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1]
}

// call is one tool call the model asks for.
func call(id, name string, args any) model.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("test arguments do not encode: %v", err))
	}
	return model.ToolCall{Type: "function", ID: id, Function: model.FunctionDefinitionParam{Name: name, Arguments: b}}
}

func writeCall(id, text string) model.ToolCall {
	return call(id, "append_note", adaptertest.AppendArgs{Text: text})
}

func readCall(id string) model.ToolCall {
	return call(id, "read_note", adaptertest.ReadArgs{Name: "note"})
}

// callTurn is a model turn that asks for the given calls in one message.
func callTurn(calls ...model.ToolCall) model.Message {
	return model.Message{Role: model.RoleAssistant, ToolCalls: calls}
}

// textTurn is a model turn that answers with text and asks for no call.
func textTurn(text string) model.Message { return model.NewAssistantMessage(text) }

// toolMessages maps call id to the content of the tool message the model
// received for it.
func toolMessages(req *model.Request) map[string]string {
	out := map[string]string{}
	if req == nil {
		return out
	}
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			out[m.ToolID] = m.Content
		}
	}
	return out
}

// classes is the tool-class map the adapter is given.
var classes = adaptertest.Classes()

// noteTools are two real trpc-agent-go function tools over the shared
// note: read_note reads it, append_note appends a line to it.
type noteTools struct{ *adaptertest.Notes }

func (n noteTools) tools() []tool.Tool {
	read := function.NewFunctionTool(func(_ context.Context, a adaptertest.ReadArgs) (adaptertest.ReadResult, error) {
		return n.ReadTool(a)
	}, function.WithName("read_note"), function.WithDescription("Reads the note."))
	write := function.NewFunctionTool(func(_ context.Context, a adaptertest.AppendArgs) (adaptertest.AppendResult, error) {
		return n.AppendTool(a)
	}, function.WithName("append_note"), function.WithDescription("Appends a line to the note."))
	return []tool.Tool{read, write}
}
