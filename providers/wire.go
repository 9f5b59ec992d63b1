package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
)

// The pieces of a wire format every adapter encodes and decodes alike:
// what a request may ask for, how a tool is described, how a reply that
// cannot be used is reported and how a tool call read from a reply is
// handed on. Each adapter keeps only what its provider's format makes
// its own.

// emptyObject stands in for absent tool input; defaultSchema is sent for
// a tool registered without a schema.
var (
	emptyObject   = json.RawMessage(`{}`)
	defaultSchema = json.RawMessage(`{"type":"object","properties":{}}`)
)

// BadRequest is the *RequestError for a request provider's format cannot
// express.
func BadRequest(provider, format string, args ...any) error {
	return &RequestError{Provider: provider, Reason: fmt.Sprintf(format, args...)}
}

// OutputCap is the reply cap to send: the request's when it sets one, else
// the adapter's fallback. A negative cap is a *RequestError.
func OutputCap(provider string, req agentrt.ModelRequest, fallback int64) (int64, error) {
	switch {
	case req.MaxOutputTokens < 0:
		return 0, BadRequest(provider, "MaxOutputTokens is negative (%d)", req.MaxOutputTokens)
	case req.MaxOutputTokens == 0:
		return fallback, nil
	}
	return req.MaxOutputTokens, nil
}

// ToolSchema is the input schema to send for t: its own, or an object with
// no properties when it has none. A schema that is not valid JSON is a
// *RequestError.
func ToolSchema(provider string, t agentrt.ToolSpec) (json.RawMessage, error) {
	schema := t.InputSchema
	if len(bytes.TrimSpace(schema)) == 0 {
		return defaultSchema, nil
	}
	if !json.Valid(schema) {
		return nil, BadRequest(provider, "tool %q has an input schema that is not valid JSON", t.Name)
	}
	return schema, nil
}

// ObjectInput is a tool use's input (block j of message i) as a JSON
// object, for a format that sends it as one: empty input is {}, anything
// but an object is a *RequestError.
func ObjectInput(provider string, i, j int, input json.RawMessage) (json.RawMessage, error) {
	in := bytes.TrimSpace(input)
	if len(in) == 0 {
		return emptyObject, nil
	}
	if !json.Valid(in) || in[0] != '{' {
		return nil, BadRequest(provider, "message %d block %d: a tool use's input must be a JSON object", i, j)
	}
	return in, nil
}

// EmptyInput is the text of empty tool input, for a format that sends
// input as a string.
const EmptyInput = "{}"

// FunctionTool is a tool as a chat-style format (OpenAI's and Ollama's)
// describes it: a "function" with a name, a description and a parameter
// schema.
type FunctionTool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef is a FunctionTool's function.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// FunctionCall is a tool call as a chat-style reply (OpenAI's and
// Ollama's) carries it: an id (Ollama may leave it out) and the function's
// name and arguments. The arguments stay raw, since OpenAI sends them as a
// JSON string and Ollama as an object.
type FunctionCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// FunctionTools describes tools as a chat-style format sends them (nil for
// none), each with ToolSchema's schema.
func FunctionTools(provider string, tools []agentrt.ToolSpec) ([]FunctionTool, error) {
	var out []FunctionTool
	for _, t := range tools {
		schema, err := ToolSchema(provider, t)
		if err != nil {
			return nil, err
		}
		out = append(out, FunctionTool{Type: "function", Function: FunctionDef{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	return out, nil
}

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	v := bytes.TrimSpace(raw)
	return len(v) == 0 || string(v) == "null"
}

// NotAReply is the error for a reply that is not even a JSON object of the
// kind provider sends (what names it: "a message object"): served, with
// its usage unknown.
func NotAReply(provider, what string, err error) error {
	return &agentrt.ServedError{Err: &ReplyError{Provider: provider, Reason: "the reply is not " + what, Err: err, UsageUnknown: true}}
}

// Served is the error for a reply that was served with usage u but cannot
// be used, for reason (and cause, when there is one).
func Served(provider string, u agentrt.Usage, reason string, cause error) error {
	return &agentrt.ServedError{Usage: u, Err: &ReplyError{Provider: provider, Reason: reason, Err: cause}}
}

// ToolCall is the i-th tool call of a reply as handed on: a copy of its
// arguments exactly as sent, valid JSON or not, so the driver records
// invalid arguments as they were ({} when there are none at all), and an
// id synthesized when the provider sent none.
func ToolCall(i int, id, name string, args json.RawMessage) agentrt.ToolUse {
	if len(bytes.TrimSpace(args)) == 0 {
		args = emptyObject
	}
	if id == "" {
		id = SynthesizeToolUseID(i)
	}
	return agentrt.ToolUse{ID: id, Name: name, Args: append(json.RawMessage(nil), args...)}
}

// OmitNull is raw, or nil when it is JSON null: for a format whose null
// arguments mean none.
func OmitNull(raw json.RawMessage) json.RawMessage {
	if IsNull(raw) {
		return nil
	}
	return raw
}

// holdBackCutOffCalls drops the tool calls of a reply that was cut off or
// refused: they are never handed on, even when they parse.
func holdBackCutOffCalls(resp *agentrt.ModelResponse) {
	if resp.StopReason == agentrt.StopMaxTokens || resp.StopReason == agentrt.StopRefusal {
		resp.ToolUses = nil
	}
}

// TurnBlock is a content block with its index in its message, for errors.
type TurnBlock struct {
	J int
	agentrt.ContentBlock
}

// ChatTurn is one message sorted for a chat-style format (OpenAI's and
// Ollama's), which sends a turn's text as one string and its tool results
// and tool calls as entries of their own.
type ChatTurn struct {
	// Text is the turn's non-empty texts, in order, a blank line apart.
	Text string
	// Results are a user turn's tool results, in order; each has a tool
	// use id.
	Results []TurnBlock
	// Uses are an assistant turn's tool uses, in order.
	Uses []TurnBlock
}

// SplitChatTurn sorts message i for a chat-style format. It refuses a role
// other than user or assistant, a block the turn's role cannot carry, and
// a tool result without a tool use id or with images, which these formats
// cannot carry.
func SplitChatTurn(provider string, i int, msg agentrt.Message) (ChatTurn, error) {
	if msg.Role != agentrt.RoleUser && msg.Role != agentrt.RoleAssistant {
		return ChatTurn{}, UnknownRole(provider, i, msg)
	}
	var t ChatTurn
	var texts []string
	for j, b := range msg.Content {
		switch {
		case b.Type == agentrt.BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case b.Type == agentrt.BlockToolResult && msg.Role == agentrt.RoleUser:
			if b.ToolUseID == "" {
				return ChatTurn{}, BadRequest(provider, "message %d block %d is a tool result without a tool use id", i, j)
			}
			if len(b.Images) > 0 {
				return ChatTurn{}, BadRequest(provider, "message %d block %d is a tool result with images, which this provider does not take; render without Options.Images", i, j)
			}
			t.Results = append(t.Results, TurnBlock{j, b})
		case b.Type == agentrt.BlockToolUse && msg.Role == agentrt.RoleAssistant:
			t.Uses = append(t.Uses, TurnBlock{j, b})
		default:
			return ChatTurn{}, CannotCarry(provider, i, j, msg)
		}
	}
	t.Text = strings.Join(texts, "\n\n")
	return t, nil
}

// CannotCarry is the *RequestError for block j of message i, whose type a
// turn of its role cannot carry; UnknownRole for a message that is neither
// the user's nor the assistant's.
func CannotCarry(provider string, i, j int, msg agentrt.Message) error {
	return BadRequest(provider, "message %d block %d has type %q, which %s %s turn cannot carry", i, j, msg.Content[j].Type, article(msg.Role), msg.Role)
}

// UnknownRole: see CannotCarry.
func UnknownRole(provider string, i int, msg agentrt.Message) error {
	return BadRequest(provider, "message %d has role %q; want user or assistant", i, msg.Role)
}

func article(role string) string {
	if role == agentrt.RoleAssistant {
		return "an"
	}
	return "a"
}

// ReplyFormat is an adapter's 2xx reply: how it carries its usage and its
// errors, and how the rest maps to a ModelResponse. P is the probe that
// reads only the fields that carry the counts, so a reply of the wrong
// shape is still charged; W is the whole reply.
type ReplyFormat[P, W any] struct {
	// Provider prefixes the errors.
	Provider string
	// Object names the reply ("chat completion"), taking the article "a":
	// a body that is not JSON is not "a chat completion object", one of
	// the wrong shape lacks "the chat completion shape".
	Object string
	// Counts reads the usage from the probe, each count through c. For a
	// format that sends its counts in a "usage" object, InUsageMember
	// makes it.
	Counts func(p *P, c *Counts) agentrt.Usage
	// ErrorMember is the reply's error member; a set one refuses it.
	ErrorMember func(w *W) json.RawMessage
	// Map reads the text, the tool uses and the stop reason of a reply
	// that passed those checks, refusing one it cannot use with r.Refuse.
	Map func(w *W, r Reply) (agentrt.ModelResponse, error)
}

// Reply is a served reply being mapped: its usage is known, so a refusal
// charges it.
type Reply struct {
	Provider string
	Usage    agentrt.Usage
	// Key is the secret to keep out of any error.
	Key string
}

// Refuse is the error for a served reply that cannot be used: Served
// with its usage, for reason (and cause, when there is one).
func (r Reply) Refuse(reason string, cause error) error {
	return Served(r.Provider, r.Usage, reason, cause)
}

// Decode maps a 2xx body (an Exchange's Decode). It reads the usage first,
// since a reply whose usage cannot be believed is unusable whatever else
// it holds, then the whole body, refusing, with the usage charged, one
// without W's shape or with its error member set (excerpted without key).
// Map maps the rest; the response gets the usage and a copy of the body,
// and keeps no tool call of a reply that was cut off or refused.
func (f ReplyFormat[P, W]) Decode(data []byte, key string) (agentrt.ModelResponse, error) {
	var probe P
	if err := json.Unmarshal(data, &probe); err != nil {
		return agentrt.ModelResponse{}, NotAReply(f.Provider, "a "+f.Object+" object", err)
	}
	var c Counts
	u, err := c.Usage(f.Counts(&probe, &c))
	if err != nil {
		return agentrt.ModelResponse{}, Unusable(err)
	}
	r := Reply{Provider: f.Provider, Usage: u, Key: key}
	var w W
	if err := json.Unmarshal(data, &w); err != nil {
		return agentrt.ModelResponse{}, r.Refuse("the reply does not have the "+f.Object+" shape", err)
	}
	if e := f.ErrorMember(&w); !IsNull(e) {
		return agentrt.ModelResponse{}, r.Refuse("the reply holds an error: "+Excerpt(e, key), nil)
	}
	resp, err := f.Map(&w, r)
	if err != nil {
		return agentrt.ModelResponse{}, err
	}
	resp.Usage, resp.Raw = u, append(json.RawMessage(nil), data...)
	holdBackCutOffCalls(&resp)
	return resp, nil
}

// UsageMember is the probe of a format that sends its counts in a "usage"
// object.
type UsageMember struct {
	Usage json.RawMessage `json:"usage"`
}

// InUsageMember reads the "usage" object into W for counts: absent or
// null usage is zero, and a member W cannot hold is a *UsageError.
func InUsageMember[W any](counts func(w *W, c *Counts) agentrt.Usage) func(*UsageMember, *Counts) agentrt.Usage {
	return func(p *UsageMember, c *Counts) agentrt.Usage {
		var w W
		if IsNull(p.Usage) {
			return agentrt.Usage{}
		}
		if err := json.Unmarshal(p.Usage, &w); err != nil {
			c.err = &UsageError{Field: "usage", Reason: "is not a usage object"}
			return agentrt.Usage{}
		}
		return counts(&w, c)
	}
}
