package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// SideEffect classifies what a tool can change. The default policy decides by it.
type SideEffect string

const (
	// ReadOnly tools change nothing; an interrupted one is simply continued.
	ReadOnly SideEffect = "read_only"
	// LocalMutation tools change local state (files in a workspace).
	LocalMutation SideEffect = "local_mutation"
	// RemoteMutation tools change something beyond the machine.
	RemoteMutation SideEffect = "remote_mutation"
	// Destructive tools delete or overwrite what cannot be recovered.
	Destructive SideEffect = "destructive"
)

// Valid reports whether s is one of the four classes.
func (s SideEffect) Valid() bool {
	switch s {
	case ReadOnly, LocalMutation, RemoteMutation, Destructive:
		return true
	}
	return false
}

// ToolSpec describes a tool to the model, the validator and the policy.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	SideEffect  SideEffect      `json:"side_effect"`
	// Timeout bounds one call; it must be positive.
	Timeout time.Duration `json:"timeout"`
	// Terminal tools complete the run with their content when they succeed.
	Terminal bool `json:"terminal,omitempty"`
}

// ToolCall is what a tool is handed: the driver's identity for the call and
// the recorded arguments.
type ToolCall struct {
	RunID  string
	StepID string
	Args   json.RawMessage
}

// ToolResult is what a tool returns. Empty Content means {}.
type ToolResult struct {
	Content json.RawMessage
	Summary string
	// Blocks, when set, are the result's typed blocks as its source sent
	// them (content.go); Content stays what a model reads.
	Blocks []ResultBlock
}

// Tool is a capability the agent may request.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, call ToolCall) (ToolResult, error)
}

// AbortRunError, returned by a tool, ends the run FAILED with tool_abort.
// Detail is recorded as the reason.
type AbortRunError struct{ Detail string }

func (e *AbortRunError) Error() string { return "agentrt: tool aborted the run: " + e.Detail }

// ToolFunc adapts a spec and a function to Tool.
type ToolFunc struct {
	ToolSpec
	Fn func(ctx context.Context, call ToolCall) (ToolResult, error)
}

// Spec returns the spec.
func (t ToolFunc) Spec() ToolSpec { return t.ToolSpec }

// Call calls Fn.
func (t ToolFunc) Call(ctx context.Context, call ToolCall) (ToolResult, error) {
	return t.Fn(ctx, call)
}

// ToolBody is a tool's body supplied where the call is made
// (OpenStep.ExecuteFunc): it is handed the recorded arguments and returns
// the result's content (empty means {}).
type ToolBody func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// SpecOnly registers a tool by its spec alone, for a caller whose tools
// live in another framework: the gate validates, judges and records calls
// to it as to any tool, and the body is supplied at each call with
// OpenStep.ExecuteFunc. A Driver's Resume (and so a Worker) refuses a
// granted call to it with ErrNoToolBody, changing nothing: such a step is
// resumed by the caller that holds the body (Gate.Attach, then
// ExecuteFunc), never by a Worker alone. Its Call runs nothing and returns
// ErrNoToolBody, so an Agent of a Driver that calls it reads a tool error.
func SpecOnly(spec ToolSpec) Tool { return specOnlyTool{spec: spec} }

type specOnlyTool struct{ spec ToolSpec }

func (t specOnlyTool) Spec() ToolSpec { return t.spec }

func (t specOnlyTool) Call(context.Context, ToolCall) (ToolResult, error) {
	return ToolResult{}, fmt.Errorf("%w: %q is registered by spec only and its body is supplied by the caller's ExecuteFunc", ErrNoToolBody, t.spec.Name)
}
