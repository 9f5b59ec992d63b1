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

// cloneEach copies s (nil stays nil), each element through clone.
func cloneEach[T any](s []T, clone func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = clone(v)
	}
	return out
}

func cloneRequest(r agentrt.ModelRequest) agentrt.ModelRequest {
	out := r
	out.Messages = cloneEach(r.Messages, func(m agentrt.Message) agentrt.Message {
		m.Content = cloneEach(m.Content, func(b agentrt.ContentBlock) agentrt.ContentBlock {
			b.Input = cloneRaw(b.Input)
			return b
		})
		return m
	})
	out.Tools = cloneEach(r.Tools, func(t agentrt.ToolSpec) agentrt.ToolSpec {
		t.InputSchema = cloneRaw(t.InputSchema)
		return t
	})
	return out
}

func cloneResponse(r agentrt.ModelResponse) agentrt.ModelResponse {
	out := r
	out.Raw = cloneRaw(r.Raw)
	out.ToolUses = cloneEach(r.ToolUses, func(tu agentrt.ToolUse) agentrt.ToolUse {
		tu.Args = cloneRaw(tu.Args)
		return tu
	})
	return out
}
