package adk

import (
	"context"
	"iter"

	"github.com/agentrt/agentrt/testkit/adaptertest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// scriptedLLM is an ADK model.LLM that answers each request with the next
// content of its script, and keeps every request it was sent, so a test
// reads what the loop fed back to the model (the tool responses).
type scriptedLLM struct {
	adaptertest.Script[*model.LLMRequest, *genai.Content]
}

func scripted(turns []*genai.Content) *scriptedLLM {
	return &scriptedLLM{adaptertest.NewScript[*model.LLMRequest](turns)}
}

func (m *scriptedLLM) Name() string { return "scripted" }

func (m *scriptedLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		next, err := m.Next(req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield(&model.LLMResponse{Content: next, TurnComplete: true}, nil)
	}
}

// lastRequest is the last request the model was sent.
func (m *scriptedLLM) lastRequest() *model.LLMRequest {
	reqs := m.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1]
}

// callTurn is a model turn that asks for the given calls, in one message:
// ADK dispatches the calls of one turn together.
func callTurn(calls ...*genai.FunctionCall) *genai.Content {
	c := &genai.Content{Role: genai.RoleModel}
	for _, fc := range calls {
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc})
	}
	return c
}

// textTurn is a model turn that answers with text and asks for no call.
func textTurn(text string) *genai.Content {
	return genai.NewContentFromText(text, genai.RoleModel)
}

// responses maps call id to the function response the model received.
func responses(req *model.LLMRequest) map[string]*genai.FunctionResponse {
	out := map[string]*genai.FunctionResponse{}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out[p.FunctionResponse.ID] = p.FunctionResponse
			}
		}
	}
	return out
}

// classes is the tool-class map the adapter is given.
var classes = adaptertest.Classes()

// noteTools are two real ADK function tools over the shared note:
// read_note reads it, append_note appends a line to it.
type noteTools struct{ *adaptertest.Notes }

func (n noteTools) tools() ([]tool.Tool, error) {
	read, err := functiontool.New(functiontool.Config{Name: "read_note", Description: "Reads the note."},
		func(_ agent.Context, a adaptertest.ReadArgs) (adaptertest.ReadResult, error) {
			return n.ReadTool(a)
		})
	if err != nil {
		return nil, err
	}
	write, err := functiontool.New(functiontool.Config{Name: "append_note", Description: "Appends a line to the note."},
		func(_ agent.Context, a adaptertest.AppendArgs) (adaptertest.AppendResult, error) {
			return n.AppendTool(a)
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{read, write}, nil
}
