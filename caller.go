package agentrt

import (
	"context"
	"errors"
)

// caller returns the accounted model handle for the step at position i.
func (s *session) caller(i int) ModelCaller {
	return &modelCaller{s: s, stepID: s.steps[i].ID}
}

// modelCaller is the accounting caller handed to an agent.
type modelCaller struct {
	s      *session
	stepID string
}

// Generate is replaced by the accounting implementation.
func (c *modelCaller) Generate(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	return ModelResponse{}, &ModelUnavailableError{Attempts: 0, Last: errors.New("model accounting is not built yet")}
}
