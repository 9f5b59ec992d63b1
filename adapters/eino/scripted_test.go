package eino

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/schema"
)

// scriptedModel is an Eino model.ToolCallingChatModel that answers each
// request with the next message of its script and keeps every request, so a
// test reads the tool messages the loop fed back.
type scriptedModel struct {
	mu       sync.Mutex
	script   []*schema.Message
	requests [][]*schema.Message
}

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, input)
	if len(m.script) == 0 {
		return nil, errors.New("scripted model: the script has no turn left")
	}
	next := m.script[0]
	m.script = m.script[1:]
	return next, nil
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
	m.mu.Lock()
	n := len(m.requests)
	m.mu.Unlock()
	return m.toolMessagesAt(n - 1)
}

// toolMessagesAt maps call id to the content of the tool messages of
// request i.
func (m *scriptedModel) toolMessagesAt(i int) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	if i < 0 || i >= len(m.requests) {
		return out
	}
	for _, msg := range m.requests[i] {
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

type readArgs struct {
	Name string `json:"name"`
}

type appendArgs struct {
	Text string `json:"text"`
}

// noteTools are two real Eino tools over one file: read_note reads it,
// append_note appends a line, so the file shows how often the write ran.
type noteTools struct {
	path string
	runs sync.Map // tool name -> *atomic.Int32
	// readHold, when set, is waited on by read_note before it reads.
	readHold func() error
	// afterAppend, when set, is called once append_note wrote its line.
	afterAppend func()
}

func (n *noteTools) count(name string) int32 {
	v, _ := n.runs.LoadOrStore(name, new(atomic.Int32))
	return v.(*atomic.Int32).Load()
}

func (n *noteTools) ran(name string) {
	v, _ := n.runs.LoadOrStore(name, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
}

func (n *noteTools) tools() ([]tool.BaseTool, error) {
	read, err := utils.InferTool("read_note", "Reads the note.", func(_ context.Context, _ readArgs) (string, error) {
		n.ran("read_note")
		if n.readHold != nil {
			if err := n.readHold(); err != nil {
				return "", err
			}
		}
		b, err := os.ReadFile(n.path)
		return string(b), err
	})
	if err != nil {
		return nil, err
	}
	write, err := utils.InferTool("append_note", "Appends a line to the note.", func(_ context.Context, a appendArgs) (string, error) {
		n.ran("append_note")
		f, err := os.OpenFile(n.path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err = f.WriteString(strings.TrimSpace(a.Text) + "\n"); err == nil {
			err = f.Sync()
		}
		if err == nil && n.afterAppend != nil {
			n.afterAppend()
		}
		return "appended", err
	})
	if err != nil {
		return nil, err
	}
	del, err := utils.InferTool("delete_note", "Deletes the note.", func(_ context.Context, _ readArgs) (string, error) {
		n.ran("delete_note")
		return "deleted", os.Remove(n.path)
	})
	if err != nil {
		return nil, err
	}
	return []tool.BaseTool{read, write, del}, nil
}
