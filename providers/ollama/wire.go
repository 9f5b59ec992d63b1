package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
)

var (
	emptyObject   = json.RawMessage(`{}`)
	defaultSchema = json.RawMessage(`{"type":"object","properties":{}}`)
)

type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []wireTool    `json:"tools,omitempty"`
	Stream   bool          `json:"stream"`
	Options  wireOptions   `json:"options"`
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

type wireTool struct {
	Type     string      `json:"type"`
	Function wireToolDef `json:"function"`
}

type wireToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

func badRequest(format string, args ...any) error {
	return &providers.RequestError{Provider: provider, Reason: fmt.Sprintf(format, args...)}
}

// encode maps a provider-neutral request to an /api/chat body. A tool result
// is sent as a tool message named after the tool use it answers.
func (m *Model) encode(req agentrt.ModelRequest) ([]byte, error) {
	if req.MaxOutputTokens < 0 {
		return nil, badRequest("MaxOutputTokens is negative (%d)", req.MaxOutputTokens)
	}
	w := wireRequest{Model: m.model, Messages: []wireMessage{}, Options: wireOptions{NumCtx: m.numCtx, NumPredict: req.MaxOutputTokens}}
	if w.Options.NumPredict == 0 {
		w.Options.NumPredict = m.maxOut
	}
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: req.System})
	}
	names := map[string]string{}
	for i, msg := range req.Messages {
		var texts []string
		switch msg.Role {
		case agentrt.RoleUser:
			var results []wireMessage
			for j, b := range msg.Content {
				switch b.Type {
				case agentrt.BlockText:
					if b.Text != "" {
						texts = append(texts, b.Text)
					}
				case agentrt.BlockToolResult:
					if len(b.Images) > 0 {
						return nil, badRequest("message %d block %d is a tool result with images, which this provider does not take; render without Options.Images", i, j)
					}
					results = append(results, wireMessage{Role: "tool", Content: b.Content, ToolName: names[b.ToolUseID]})
				default:
					return nil, badRequest("message %d block %d has type %q, which a user turn cannot carry", i, j, b.Type)
				}
			}
			w.Messages = append(w.Messages, results...)
			if len(texts) > 0 {
				w.Messages = append(w.Messages, wireMessage{Role: "user", Content: strings.Join(texts, "\n\n")})
			}
		case agentrt.RoleAssistant:
			out := wireMessage{Role: "assistant"}
			for j, b := range msg.Content {
				switch b.Type {
				case agentrt.BlockText:
					if b.Text != "" {
						texts = append(texts, b.Text)
					}
				case agentrt.BlockToolUse:
					args := bytes.TrimSpace(b.Input)
					if len(args) == 0 {
						args = emptyObject
					}
					if !json.Valid(args) || args[0] != '{' {
						return nil, badRequest("message %d block %d: a tool use's input must be a JSON object", i, j)
					}
					names[b.ToolUseID] = b.Name
					out.ToolCalls = append(out.ToolCalls, wireToolCall{Function: wireFunction{Name: b.Name, Arguments: args}})
				default:
					return nil, badRequest("message %d block %d has type %q, which an assistant turn cannot carry", i, j, b.Type)
				}
			}
			out.Content = strings.Join(texts, "\n\n")
			w.Messages = append(w.Messages, out)
		default:
			return nil, badRequest("message %d has role %q; want user or assistant", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = defaultSchema
		} else if !json.Valid(schema) {
			return nil, badRequest("tool %q has an input schema that is not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolDef{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	return providers.MarshalJSON(w)
}

type wireResponse struct {
	Message *struct {
		Content   string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount json.RawMessage `json:"prompt_eval_count"`
	EvalCount       json.RawMessage `json:"eval_count"`
	Error           json.RawMessage `json:"error"`
}

// usageProbe reads only the counts, so usage is checked even when the rest
// of the reply has the wrong shape.
type usageProbe struct {
	PromptEvalCount json.RawMessage `json:"prompt_eval_count"`
	EvalCount       json.RawMessage `json:"eval_count"`
}

func isNull(raw json.RawMessage) bool {
	v := bytes.TrimSpace(raw)
	return len(v) == 0 || string(v) == "null"
}

// decode maps an /api/chat reply. Usage is read first: a reply whose usage
// cannot be believed is unusable whatever else it holds.
func decode(data []byte, key string) (agentrt.ModelResponse, error) {
	var probe usageProbe
	if err := json.Unmarshal(data, &probe); err != nil {
		return agentrt.ModelResponse{}, &agentrt.ServedError{Err: &providers.ReplyError{Provider: provider, Reason: "the reply is not a chat response object", Err: err, UsageUnknown: true}}
	}
	var u agentrt.Usage
	var err error
	if u.InputTokens, err = providers.UsageCount("prompt_eval_count", probe.PromptEvalCount); err != nil {
		return agentrt.ModelResponse{}, providers.Unusable(err)
	}
	if u.OutputTokens, err = providers.UsageCount("eval_count", probe.EvalCount); err != nil {
		return agentrt.ModelResponse{}, providers.Unusable(err)
	}
	served := func(reason string, cause error) error {
		return &agentrt.ServedError{Usage: u, Err: &providers.ReplyError{Provider: provider, Reason: reason, Err: cause}}
	}
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return agentrt.ModelResponse{}, served("the reply does not have the chat response shape", err)
	}
	if !isNull(w.Error) {
		return agentrt.ModelResponse{}, served("the reply holds an error: "+providers.Excerpt(w.Error, key), nil)
	}
	if w.Message == nil {
		return agentrt.ModelResponse{}, served("the reply holds no message", nil)
	}
	resp := agentrt.ModelResponse{Text: w.Message.Content, Usage: u, Raw: append(json.RawMessage(nil), data...)}
	for i, tc := range w.Message.ToolCalls {
		args := bytes.TrimSpace(tc.Function.Arguments)
		if isNull(args) {
			args = emptyObject
		}
		id := tc.ID
		if id == "" {
			id = providers.SynthesizeToolUseID(i)
		}
		resp.ToolUses = append(resp.ToolUses, agentrt.ToolUse{ID: id, Name: tc.Function.Name, Args: append(json.RawMessage(nil), args...)})
	}
	switch {
	case w.DoneReason == "length":
		resp.StopReason = agentrt.StopMaxTokens
		// A call cut off is never handed on, even if it parses.
		resp.ToolUses = nil
	case len(resp.ToolUses) > 0:
		resp.StopReason = agentrt.StopToolUse
	case w.DoneReason == "stop" || w.DoneReason == "":
		resp.StopReason = agentrt.StopEndTurn
	default:
		resp.StopReason = w.DoneReason
	}
	return resp, nil
}
