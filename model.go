package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Model is a language model the accounting caller wraps.
type Model interface {
	// Name keys accounting and pricing.
	Name() string
	Generate(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ModelProvider is an optional capability of a Model: the provider it
// sends requests to, named as the OpenTelemetry GenAI conventions name it
// in gen_ai.provider.name ("openai", "anthropic", "ollama"). The caller
// records it in each model.dispatched event, so an exporter can say where a
// request went without knowing the adapter.
type ModelProvider interface {
	Provider() string
}

// ModelCaller is an agent's only handle to a model: every call through it is
// accounted and limited.
type ModelCaller interface {
	Generate(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ModelRequest is a provider-neutral request.
type ModelRequest struct {
	System          string     `json:"system,omitempty"`
	Messages        []Message  `json:"messages"`
	Tools           []ToolSpec `json:"tools,omitempty"`
	MaxOutputTokens int64      `json:"max_output_tokens,omitempty"`
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// Content block types.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// ContentBlock is text, a tool use, or a tool result.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Images ride with a tool result, for a provider that accepts images
	// in tool results; render sets them only when asked (render.Options).
	Images []ImagePart `json:"images,omitempty"`
}

// ImagePart is one image a tool result carries to a model.
type ImagePart struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// Normalised stop reasons.
const (
	StopToolUse   = "tool_use"
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopRefusal   = "refusal"
)

// ToolUse is one tool use in a reply.
type ToolUse struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ModelResponse is a provider-neutral reply.
type ModelResponse struct {
	Text       string          `json:"text,omitempty"`
	ToolUses   []ToolUse       `json:"tool_uses,omitempty"`
	StopReason string          `json:"stop_reason"`
	Usage      Usage           `json:"usage"`
	Raw        json.RawMessage `json:"-"`
}

// TransientError marks a failure worth retrying (408/409/425/429/5xx, timeouts).
type TransientError struct {
	Err        error
	RetryAfter time.Duration
}

func (e *TransientError) Error() string { return "transient model error: " + errText(e.Err) }
func (e *TransientError) Unwrap() error { return e.Err }

// ServedError is a reply the provider served (and billed) but that cannot be
// used. It is charged Usage and never retried.
type ServedError struct {
	Usage Usage
	Err   error
}

func (e *ServedError) Error() string { return "served but unusable model reply: " + errText(e.Err) }

// errText is err's message, or a placeholder for a nil error, so an error
// built without a cause still prints.
func errText(err error) string {
	if err == nil {
		return "(no cause given)"
	}
	return err.Error()
}
func (e *ServedError) Unwrap() error { return e.Err }

// Price is what a model costs, in micros per million tokens.
type Price struct {
	InputPerMTok       Micros `json:"input_per_mtok"`
	OutputPerMTok      Micros `json:"output_per_mtok"`
	CachedInputPerMTok Micros `json:"cached_input_per_mtok"`
}

// PriceTable maps model names to prices. A model present with a zero Price is
// declared free; a model absent from the table is unpriced.
type PriceTable map[string]Price

// ModelCallStatus is where a model attempt is.
type ModelCallStatus string

const (
	// ModelDispatched: the row is reserved and the request may be on the wire.
	ModelDispatched ModelCallStatus = "dispatched"
	// ModelOK: a usable reply was recorded.
	ModelOK ModelCallStatus = "ok"
	// ModelError: the attempt failed; it is charged what the provider billed.
	ModelError ModelCallStatus = "error"
	// ModelAmbiguous: the request may have been served; charged the estimate.
	ModelAmbiguous ModelCallStatus = "ambiguous"
)

// ModelCall is one model attempt as stored.
type ModelCall struct {
	ID           string          `json:"id"`
	RunID        string          `json:"run_id"`
	StepID       string          `json:"step_id"`
	Attempt      int             `json:"attempt"`
	Status       ModelCallStatus `json:"status"`
	Model        string          `json:"model"`
	Usage        Usage           `json:"usage"`
	Cost         Micros          `json:"cost_micros"`
	Latency      time.Duration   `json:"latency"`
	Error        string          `json:"error,omitempty"`
	DispatchedAt time.Time       `json:"dispatched_at"`
	CompletedAt  time.Time       `json:"completed_at,omitzero"`
}

// LimitError is a limit refusing a model call; an agent that returns it ends
// the run with Reason.
type LimitError struct {
	Reason TerminalReason
	Detail string
}

func (e *LimitError) Error() string { return fmt.Sprintf("agentrt: limit %s: %s", e.Reason, e.Detail) }

// ModelUnavailableError says the model could not be used; an agent that
// returns it ends the run with model_unavailable.
type ModelUnavailableError struct {
	Attempts int
	Last     error
}

func (e *ModelUnavailableError) Error() string {
	return fmt.Sprintf("agentrt: model unavailable after %d attempt(s): %v", e.Attempts, e.Last)
}
func (e *ModelUnavailableError) Unwrap() error { return e.Last }

// DefaultMaxRetryAfter bounds how long a Retry-After may make the caller wait
// when ModelConfig.MaxRetryAfter is zero.
const DefaultMaxRetryAfter = time.Minute

// ModelConfig wraps a Model in the accounting caller.
type ModelConfig struct {
	// Model is required.
	Model Model
	// Prices price the model for cost limits. A model absent from the table
	// is unpriced: refused when a cost limit is set. Declare a free model
	// with a zero Price.
	Prices PriceTable
	// CallTimeout bounds one attempt; zero means 2 minutes.
	CallTimeout time.Duration
	// MaxRetries is how many times a transient failure is retried within one
	// Generate. Zero means no retries: this is the one place the default is
	// stated.
	MaxRetries int
	// Backoff is the base of the exponential wait between retries; zero
	// means 1 second.
	Backoff time.Duration
	// MaxRetryAfter bounds a provider's Retry-After; a longer one fails the
	// call. Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration

	// sleep, when set by a test, replaces the wait between attempts.
	sleep func(ctx context.Context, d time.Duration) error
}
