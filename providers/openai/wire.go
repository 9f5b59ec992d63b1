package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/textcut"
	"github.com/agentrt/agentrt/providers"
)

type wireRequest struct {
	Model               string                   `json:"model"`
	Messages            []wireMessage            `json:"messages"`
	Tools               []providers.FunctionTool `json:"tools,omitempty"`
	MaxTokens           int64                    `json:"max_tokens,omitempty"`
	MaxCompletionTokens int64                    `json:"max_completion_tokens,omitempty"`
	Stream              bool                     `json:"stream"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// encode maps a provider-neutral request to a chat-completions body.
func (m *Model) encode(req agentrt.ModelRequest) ([]byte, error) {
	maxOut, err := providers.OutputCap(provider, req, m.maxOut)
	if err != nil {
		return nil, err
	}
	w := wireRequest{Model: m.model}
	if m.maxField == "max_completion_tokens" {
		w.MaxCompletionTokens = maxOut
	} else {
		w.MaxTokens = maxOut
	}
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: ptr(req.System)})
	}
	for i, msg := range req.Messages {
		out, err := encodeMessage(i, msg)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, out...)
	}
	if w.Tools, err = providers.FunctionTools(provider, req.Tools); err != nil {
		return nil, err
	}
	return providers.MarshalJSON(w)
}

// encodeMessage maps one turn. A user turn's tool results become tool
// messages placed first, since they must follow the assistant turn that
// asked for them; its text follows as one user message.
func encodeMessage(i int, msg agentrt.Message) ([]wireMessage, error) {
	t, err := providers.SplitChatTurn(provider, i, msg)
	if err != nil {
		return nil, err
	}
	if msg.Role == agentrt.RoleUser {
		var out []wireMessage
		for _, r := range t.Results {
			out = append(out, wireMessage{Role: "tool", ToolCallID: r.ToolUseID, Content: ptr(r.Content)})
		}
		if t.Text != "" {
			out = append(out, wireMessage{Role: "user", Content: ptr(t.Text)})
		}
		return out, nil
	}
	out := wireMessage{Role: "assistant"}
	for _, u := range t.Uses {
		args := string(u.Input)
		if strings.TrimSpace(args) == "" {
			args = providers.EmptyInput
		}
		out.ToolCalls = append(out.ToolCalls, wireToolCall{ID: u.ToolUseID, Type: "function", Function: wireFunction{Name: u.Name, Arguments: args}})
	}
	switch {
	case t.Text != "":
		out.Content = ptr(t.Text)
	case len(out.ToolCalls) == 0:
		out.Content = ptr("(no output)")
	}
	return []wireMessage{out}, nil
}

func ptr(s string) *string { return &s }

type wireResponse struct {
	Choices json.RawMessage `json:"choices"`
	Error   json.RawMessage `json:"error"`
}

type wireUsage struct {
	PromptTokens        json.RawMessage `json:"prompt_tokens"`
	CompletionTokens    json.RawMessage `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens json.RawMessage `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type wireChoice struct {
	Message struct {
		Content   json.RawMessage          `json:"content"`
		Refusal   *string                  `json:"refusal"`
		ToolCalls []providers.FunctionCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// replies is a chat-completions reply: its counts in a "usage" object,
// an error member, and mapReply for the rest.
var replies = providers.ReplyFormat[providers.UsageMember, wireResponse]{
	Provider: provider, Object: "chat completion", Counts: providers.InUsageMember(counts),
	ErrorMember: func(w *wireResponse) json.RawMessage { return w.Error }, Map: mapReply,
}

// mapReply reads the first choice: its text (or refusal), tool calls and
// finish reason.
func mapReply(w *wireResponse, r providers.Reply) (agentrt.ModelResponse, error) {
	var choices []wireChoice
	if err := json.Unmarshal(w.Choices, &choices); err != nil || providers.IsNull(w.Choices) {
		return agentrt.ModelResponse{}, r.Refuse("choices is not a list of chat completion choices", err)
	}
	if len(choices) == 0 {
		return agentrt.ModelResponse{}, r.Refuse("the reply holds no choice", nil)
	}
	c := choices[0]
	text, err := decodeContent(c.Message.Content)
	if err != nil {
		return agentrt.ModelResponse{}, r.Refuse(err.Error(), nil)
	}
	resp := agentrt.ModelResponse{Text: text}
	for i, tc := range c.Message.ToolCalls {
		args, err := decodeArguments(tc.Function.Arguments)
		if err != nil {
			return agentrt.ModelResponse{}, r.Refuse(fmt.Sprintf("tool call %d: %v", i, err), nil)
		}
		resp.ToolUses = append(resp.ToolUses, providers.ToolCall(i, tc.ID, tc.Function.Name, args))
	}
	refusal := c.Message.Refusal != nil && *c.Message.Refusal != ""
	switch {
	case c.FinishReason == "length":
		resp.StopReason = agentrt.StopMaxTokens
	case c.FinishReason == "content_filter" || refusal:
		resp.StopReason = agentrt.StopRefusal
		if resp.Text == "" && refusal {
			resp.Text = *c.Message.Refusal
		}
	case len(resp.ToolUses) > 0:
		resp.StopReason = agentrt.StopToolUse
	case c.FinishReason == "stop" || c.FinishReason == "tool_calls" || c.FinishReason == "":
		resp.StopReason = agentrt.StopEndTurn
	default:
		resp.StopReason = c.FinishReason
	}
	return resp, nil
}

// counts reads the usage object's counts.
func counts(wu *wireUsage, c *providers.Counts) agentrt.Usage {
	u := agentrt.Usage{
		InputTokens:  c.Read("usage.prompt_tokens", wu.PromptTokens),
		OutputTokens: c.Read("usage.completion_tokens", wu.CompletionTokens),
	}
	if wu.PromptTokensDetails != nil {
		u.CachedInputTokens = c.Read("usage.prompt_tokens_details.cached_tokens", wu.PromptTokensDetails.CachedTokens)
	}
	return u
}

// decodeContent reads message content: a string, null, or a list of text
// parts.
func decodeContent(raw json.RawMessage) (string, error) {
	if providers.IsNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("message content is neither text nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// decodeArguments returns a tool call's arguments as the bytes the server
// sent. The wire form is a string holding JSON; its content is returned
// verbatim whether or not it is valid JSON, so the driver can record invalid
// arguments as they were. A server that sends an object instead has it
// returned as is. Empty arguments are nil, which providers.ToolCall makes {}.
func decodeArguments(raw json.RawMessage) (json.RawMessage, error) {
	v := bytes.TrimSpace(raw)
	if providers.IsNull(v) {
		return nil, nil
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("arguments are not a JSON string")
		}
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		return json.RawMessage(s), nil
	}
	if v[0] == '{' {
		return append(json.RawMessage(nil), v...), nil
	}
	return nil, fmt.Errorf("arguments are neither a string nor an object (got %s)", textcut.Truncate(providers.Excerpt(v), 64))
}
