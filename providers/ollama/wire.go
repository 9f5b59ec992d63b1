package ollama

import (
	"encoding/json"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
)

type wireRequest struct {
	Model    string                   `json:"model"`
	Messages []wireMessage            `json:"messages"`
	Tools    []providers.FunctionTool `json:"tools,omitempty"`
	Stream   bool                     `json:"stream"`
	Options  wireOptions              `json:"options"`
}

type wireOptions struct {
	NumCtx     int   `json:"num_ctx,omitempty"`
	NumPredict int64 `json:"num_predict,omitempty"`
}

type wireMessage struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	ToolName  string         `json:"tool_name,omitempty"`
}

type wireToolCall struct {
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// encode maps a provider-neutral request to an /api/chat body. A tool result
// is sent as a tool message named after the tool use it answers.
func (m *Model) encode(req agentrt.ModelRequest) ([]byte, error) {
	maxOut, err := providers.OutputCap(provider, req, m.maxOut)
	if err != nil {
		return nil, err
	}
	w := wireRequest{Model: m.model, Messages: []wireMessage{}, Options: wireOptions{NumCtx: m.numCtx, NumPredict: maxOut}}
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: req.System})
	}
	names := map[string]string{}
	for i, msg := range req.Messages {
		t, err := providers.SplitChatTurn(provider, i, msg)
		if err != nil {
			return nil, err
		}
		if msg.Role == agentrt.RoleUser {
			for _, r := range t.Results {
				w.Messages = append(w.Messages, wireMessage{Role: "tool", Content: r.Content, ToolName: names[r.ToolUseID]})
			}
			if t.Text != "" {
				w.Messages = append(w.Messages, wireMessage{Role: "user", Content: t.Text})
			}
			continue
		}
		out := wireMessage{Role: "assistant", Content: t.Text}
		for _, u := range t.Uses {
			args, err := providers.ObjectInput(provider, i, u.J, u.Input)
			if err != nil {
				return nil, err
			}
			names[u.ToolUseID] = u.Name
			out.ToolCalls = append(out.ToolCalls, wireToolCall{Function: wireFunction{Name: u.Name, Arguments: args}})
		}
		w.Messages = append(w.Messages, out)
	}
	if w.Tools, err = providers.FunctionTools(provider, req.Tools); err != nil {
		return nil, err
	}
	return providers.MarshalJSON(w)
}

type wireResponse struct {
	Message *struct {
		Content   string                   `json:"content"`
		ToolCalls []providers.FunctionCall `json:"tool_calls"`
	} `json:"message"`
	DoneReason string          `json:"done_reason"`
	Error      json.RawMessage `json:"error"`
}

// usageProbe reads only the counts, so usage is checked even when the rest
// of the reply has the wrong shape.
type usageProbe struct {
	PromptEvalCount json.RawMessage `json:"prompt_eval_count"`
	EvalCount       json.RawMessage `json:"eval_count"`
}

// counts reads the token counts; absent counts are zero.
func counts(p *usageProbe, c *providers.Counts) agentrt.Usage {
	return agentrt.Usage{
		InputTokens:  c.Read("prompt_eval_count", p.PromptEvalCount),
		OutputTokens: c.Read("eval_count", p.EvalCount),
	}
}

// replies is an /api/chat reply: its counts spread over the reply, an
// error member, and mapReply for the rest.
var replies = providers.ReplyFormat[usageProbe, wireResponse]{
	Provider: provider, Object: "chat response", Counts: counts,
	ErrorMember: func(w *wireResponse) json.RawMessage { return w.Error }, Map: mapReply,
}

// mapReply reads the message's text and tool calls and the done reason.
func mapReply(w *wireResponse, r providers.Reply) (agentrt.ModelResponse, error) {
	if w.Message == nil {
		return agentrt.ModelResponse{}, r.Refuse("the reply holds no message", nil)
	}
	resp := agentrt.ModelResponse{Text: w.Message.Content}
	for i, tc := range w.Message.ToolCalls {
		resp.ToolUses = append(resp.ToolUses, providers.ToolCall(i, tc.ID, tc.Function.Name, providers.OmitNull(tc.Function.Arguments)))
	}
	switch {
	case w.DoneReason == "length":
		resp.StopReason = agentrt.StopMaxTokens
	case len(resp.ToolUses) > 0:
		resp.StopReason = agentrt.StopToolUse
	case w.DoneReason == "stop" || w.DoneReason == "":
		resp.StopReason = agentrt.StopEndTurn
	default:
		resp.StopReason = w.DoneReason
	}
	return resp, nil
}
