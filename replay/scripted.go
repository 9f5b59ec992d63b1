package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentrt/agentrt"
)

// ErrScriptExhausted says a Scripted model was called more times than it has
// responses.
var ErrScriptExhausted = errors.New("replay: the script has no more responses")

// ExhaustedError names the call that ran past the script. It matches
// ErrScriptExhausted.
type ExhaustedError struct {
	Call      int // zero-based index of the call
	Responses int
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("replay: call %d ran past the script's %d response(s)", e.Call, e.Responses)
}

// Is matches ErrScriptExhausted.
func (e *ExhaustedError) Is(target error) bool { return target == ErrScriptExhausted }

// Scripted is a model that serves Responses in order: call i gets
// Responses[i], or Errors[i] when that is set. It records every request it
// is asked. It is safe for concurrent use; set its fields before the first
// call.
type Scripted struct {
	// Responses are served in call order.
	Responses []agentrt.ModelResponse
	// Errors, keyed by zero-based call index, are returned instead of the
	// response at that index, which the call consumes.
	Errors map[int]error
	// ModelName is what Name returns. Zero means "scripted".
	ModelName string

	mu       sync.Mutex
	calls    int
	requests []agentrt.ModelRequest
}

// Name is ModelName, or "scripted".
func (s *Scripted) Name() string {
	if s.ModelName == "" {
		return "scripted"
	}
	return s.ModelName
}

// Generate serves the next response. A cancelled context is returned without
// consuming or recording anything.
func (s *Scripted) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return agentrt.ModelResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.calls
	s.calls++
	s.requests = append(s.requests, cloneRequest(req))
	if err := s.Errors[i]; err != nil {
		return agentrt.ModelResponse{}, err
	}
	if i >= len(s.Responses) {
		return agentrt.ModelResponse{}, &ExhaustedError{Call: i, Responses: len(s.Responses)}
	}
	return cloneResponse(s.Responses[i]), nil
}

// Requests returns a copy of every request received, in call order.
func (s *Scripted) Requests() []agentrt.ModelRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]agentrt.ModelRequest, len(s.requests))
	for i, r := range s.requests {
		out[i] = cloneRequest(r)
	}
	return out
}

// Calls is how many times Generate ran past a live context.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage{}, r...)
}

func cloneRequest(r agentrt.ModelRequest) agentrt.ModelRequest {
	out := r
	if r.Messages != nil {
		out.Messages = make([]agentrt.Message, len(r.Messages))
		for i, m := range r.Messages {
			out.Messages[i] = m
			if m.Content != nil {
				out.Messages[i].Content = make([]agentrt.ContentBlock, len(m.Content))
				for j, b := range m.Content {
					b.Input = cloneRaw(b.Input)
					out.Messages[i].Content[j] = b
				}
			}
		}
	}
	if r.Tools != nil {
		out.Tools = make([]agentrt.ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.InputSchema = cloneRaw(t.InputSchema)
			out.Tools[i] = t
		}
	}
	return out
}

func cloneResponse(r agentrt.ModelResponse) agentrt.ModelResponse {
	out := r
	out.Raw = cloneRaw(r.Raw)
	if r.ToolUses != nil {
		out.ToolUses = make([]agentrt.ToolUse, len(r.ToolUses))
		for i, tu := range r.ToolUses {
			tu.Args = cloneRaw(tu.Args)
			out.ToolUses[i] = tu
		}
	}
	return out
}
