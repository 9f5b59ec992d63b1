package adaptertest

import (
	"errors"
	"sync"
)

// Script is a scripted model's memory, safe for concurrent use: the turns
// it answers with, in order, and every request it was sent, so a test
// reads what a framework's loop fed back to its model. Each adapter's
// scripted model embeds one and implements its framework's model
// interface with Next.
type Script[Req, Turn any] struct {
	mu       sync.Mutex
	turns    []Turn
	requests []Req
}

// NewScript is a script that answers with turns, in order.
func NewScript[Req, Turn any](turns []Turn) Script[Req, Turn] {
	return Script[Req, Turn]{turns: turns}
}

// Next records req and returns the next turn; with none left it is an
// error, which the framework's loop reads as its model's.
func (s *Script[Req, Turn]) Next(req Req) (Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if len(s.turns) == 0 {
		var zero Turn
		return zero, errors.New("scripted model: the script has no turn left")
	}
	next := s.turns[0]
	s.turns = s.turns[1:]
	return next, nil
}

// Requests is every request sent so far, oldest first.
func (s *Script[Req, Turn]) Requests() []Req {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Req(nil), s.requests...)
}
