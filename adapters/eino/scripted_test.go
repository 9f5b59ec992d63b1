package eino

import (
	"context"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/schema"
)

// scriptedModel is an Eino model.ToolCallingChatModel that answers each
// request with the next message of its script and keeps every request, so a
// test reads the tool messages the loop fed back.
type scriptedModel struct {
	adaptertest.Script[[]*schema.Message, *schema.Message]
}

func scripted(turns []*schema.Message) *scriptedModel {
	return &scriptedModel{adaptertest.NewScript[[]*schema.Message](turns)}
}

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	return m.Next(input)
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// WithTools returns the same model: the script already knows the tools.
func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

// toolMessages maps call id to the content of the tool message the model
// received last.
func (m *scriptedModel) toolMessages() map[string]string {
	return m.toolMessagesAt(len(m.Requests()) - 1)
}

// toolMessagesAt maps call id to the content of the tool messages of
// request i.
func (m *scriptedModel) toolMessagesAt(i int) map[string]string {
	reqs, out := m.Requests(), map[string]string{}
	if i < 0 || i >= len(reqs) {
		return out
	}
	for _, msg := range reqs[i] {
		if msg.Role == schema.Tool {
			out[msg.ToolCallID] = msg.Content
		}
	}
	return out
}

// callTurn is an assistant message asking for the given calls at once.
func callTurn(calls ...schema.ToolCall) *schema.Message {
	return schema.AssistantMessage("", calls)
}

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

// classes is the tool-class map an adapter is given.
var classes = map[string]agentrt.SideEffect{
	"read_note":   agentrt.ReadOnly,
	"append_note": agentrt.LocalMutation,
	"delete_note": agentrt.Destructive,
}

// noteTools are real Eino tools over the shared note: read_note reads
// it, append_note appends a line, delete_note empties it.
type noteTools struct{ *adaptertest.Notes }

func (n noteTools) tools() ([]tool.BaseTool, error) {
	read, err := utils.InferTool("read_note", "Reads the note.", func(_ context.Context, _ adaptertest.ReadArgs) (string, error) { return n.Read() })
	if err != nil {
		return nil, err
	}
	write, err := utils.InferTool("append_note", "Appends a line to the note.", func(_ context.Context, a adaptertest.AppendArgs) (string, error) {
		return "appended", n.Append(a.Text)
	})
	if err != nil {
		return nil, err
	}
	del, err := utils.InferTool("delete_note", "Deletes the note.", func(_ context.Context, _ adaptertest.ReadArgs) (string, error) {
		return "deleted", n.Delete("delete_note")
	})
	if err != nil {
		return nil, err
	}
	return []tool.BaseTool{read, write, del}, nil
}
