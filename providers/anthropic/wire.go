package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
)

// noOutput stands in for a turn with no text, which the API refuses.
const noOutput = "(no output)"

type wireRequest struct {
	Model     string        `json:"model"`
	MaxTokens int64         `json:"max_tokens"`
	System    string        `json:"system,omitempty"`
	Messages  []wireMessage `json:"messages"`
	Tools     []wireTool    `json:"tools,omitempty"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool result's: its text, or with images a list of
	// text and image blocks.
	Content any  `json:"content,omitempty"`
	IsError bool `json:"is_error,omitempty"`
}

// wirePart is one block of a tool result's content list.
type wirePart struct {
	Type   string      `json:"type"`
	Text   string      `json:"text,omitempty"`
	Source *wireSource `json:"source,omitempty"`
}

type wireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"` // base64 on the wire, as the API wants it
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func badRequest(format string, args ...any) error {
	return providers.BadRequest(provider, format, args...)
}

// encode maps a provider-neutral request to a Messages API body.
func (m *Model) encode(req agentrt.ModelRequest) ([]byte, error) {
	maxOut, err := providers.OutputCap(provider, req, m.maxOut)
	if err != nil {
		return nil, err
	}
	w := wireRequest{Model: m.model, MaxTokens: maxOut, System: req.System, Messages: []wireMessage{}}
	for i, msg := range req.Messages {
		out, err := encodeMessage(i, msg)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, out)
	}
	for _, t := range req.Tools {
		schema, err := providers.ToolSchema(provider, t)
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return providers.MarshalJSON(w)
}

// encodeMessage maps one turn. In a user turn tool results go first, as the
// API requires; empty text blocks, which it refuses, are dropped.
func encodeMessage(i int, msg agentrt.Message) (wireMessage, error) {
	if msg.Role != agentrt.RoleUser && msg.Role != agentrt.RoleAssistant {
		return wireMessage{}, providers.UnknownRole(provider, i, msg)
	}
	var results, rest []wireBlock
	for j, b := range msg.Content {
		switch {
		case b.Type == agentrt.BlockText:
			if strings.TrimSpace(b.Text) != "" {
				rest = append(rest, wireBlock{Type: "text", Text: b.Text})
			}
		case b.Type == agentrt.BlockToolUse && msg.Role == agentrt.RoleAssistant:
			input, err := providers.ObjectInput(provider, i, j, b.Input)
			if err != nil {
				return wireMessage{}, err
			}
			if b.ToolUseID == "" {
				return wireMessage{}, badRequest("message %d block %d is a tool use without an id", i, j)
			}
			rest = append(rest, wireBlock{Type: "tool_use", ID: b.ToolUseID, Name: b.Name, Input: input})
		case b.Type == agentrt.BlockToolResult && msg.Role == agentrt.RoleUser:
			if b.ToolUseID == "" {
				return wireMessage{}, badRequest("message %d block %d is a tool result without a tool use id", i, j)
			}
			var content any
			if b.Content != "" {
				content = b.Content
			}
			if len(b.Images) > 0 {
				parts := []wirePart{}
				if b.Content != "" {
					parts = append(parts, wirePart{Type: "text", Text: b.Content})
				}
				for _, im := range b.Images {
					parts = append(parts, wirePart{Type: "image", Source: &wireSource{Type: "base64", MediaType: im.MIMEType, Data: im.Data}})
				}
				content = parts
			}
			results = append(results, wireBlock{Type: "tool_result", ToolUseID: b.ToolUseID, Content: content, IsError: b.IsError})
		default:
			return wireMessage{}, providers.CannotCarry(provider, i, j, msg)
		}
	}
	blocks := append(results, rest...)
	if len(blocks) == 0 {
		blocks = []wireBlock{{Type: "text", Text: noOutput}}
	}
	return wireMessage{Role: msg.Role, Content: blocks}, nil
}

type wireResponse struct {
	Type       string          `json:"type"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Error      json.RawMessage `json:"error"`
}

type wireUsage struct {
	InputTokens              json.RawMessage `json:"input_tokens"`
	OutputTokens             json.RawMessage `json:"output_tokens"`
	CacheCreationInputTokens json.RawMessage `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     json.RawMessage `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m json.RawMessage `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h json.RawMessage `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

type wireContent struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// replies is a Messages API reply: its counts in a "usage" object, an
// error member, and mapReply for the rest.
var replies = providers.ReplyFormat[providers.UsageMember, wireResponse]{
	Provider: provider, Object: "message", Counts: providers.InUsageMember(counts),
	ErrorMember: func(w *wireResponse) json.RawMessage { return w.Error }, Map: mapReply,
}

// mapReply reads a reply's content blocks and stop reason. A reply of type
// "error" is refused even without an error member.
func mapReply(w *wireResponse, r providers.Reply) (agentrt.ModelResponse, error) {
	if w.Type == "error" {
		return agentrt.ModelResponse{}, r.Refuse("the reply holds an error: "+providers.Excerpt(w.Error, r.Key), nil)
	}
	var blocks []wireContent
	if err := json.Unmarshal(w.Content, &blocks); err != nil || providers.IsNull(w.Content) {
		return agentrt.ModelResponse{}, r.Refuse("content is not a list of content blocks", nil)
	}
	var resp agentrt.ModelResponse
	var text strings.Builder
	for i, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			resp.ToolUses = append(resp.ToolUses, providers.ToolCall(i, b.ID, b.Name, providers.OmitNull(b.Input)))
		}
	}
	resp.Text = text.String()
	stop := ""
	if w.StopReason != nil {
		stop = *w.StopReason
	}
	switch stop {
	case "stop_sequence":
		resp.StopReason = agentrt.StopEndTurn
	case "":
		resp.StopReason = agentrt.StopEndTurn
		if len(resp.ToolUses) > 0 {
			resp.StopReason = agentrt.StopToolUse
		}
	default:
		resp.StopReason = stop
	}
	return resp, nil
}

// counts reads the usage object's counts, folding cache reads and writes
// into input.
func counts(wu *wireUsage, c *providers.Counts) agentrt.Usage {
	input := c.Read("usage.input_tokens", wu.InputTokens)
	output := c.Read("usage.output_tokens", wu.OutputTokens)
	read := c.Read("usage.cache_read_input_tokens", wu.CacheReadInputTokens)
	written := c.Read("usage.cache_creation_input_tokens", wu.CacheCreationInputTokens)
	write5m, write1h := written, int64(0)
	if wu.CacheCreation != nil && (!providers.IsNull(wu.CacheCreation.Ephemeral5m) || !providers.IsNull(wu.CacheCreation.Ephemeral1h)) {
		write5m = c.Read("usage.cache_creation.ephemeral_5m_input_tokens", wu.CacheCreation.Ephemeral5m)
		write1h = c.Read("usage.cache_creation.ephemeral_1h_input_tokens", wu.CacheCreation.Ephemeral1h)
	}
	// 1.25 times the 5-minute writes, rounded up, is the writes plus a
	// quarter of them rounded up; twice the 1-hour writes is them added twice.
	quarter := write5m/4 + min(write5m%4, 1)
	total := c.Sum("usage input with cache reads and writes", input, read, write5m, quarter, write1h, write1h)
	return agentrt.Usage{InputTokens: total, OutputTokens: output, CachedInputTokens: read}
}
