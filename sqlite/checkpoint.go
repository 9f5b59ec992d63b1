package sqlite

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/agentrt/agentrt/checkpoint"
)

// integrators names the database files an integrator in this process
// holds, by absolute path: one per file in a process. Integrators in two
// processes on one file are still safe (a fold that loses the race writes
// nothing), only wasteful.
var integrators struct {
	sync.Mutex
	held map[string]bool
}

var _ checkpoint.Elector = (*Store)(nil)

// CheckpointElect implements checkpoint.Elector within the process.
func (s *Store) CheckpointElect(ctx context.Context) (func(), bool, error) {
	key, err := filepath.Abs(s.path)
	if err != nil {
		return nil, false, err
	}
	integrators.Lock()
	defer integrators.Unlock()
	if integrators.held[key] {
		return nil, false, nil
	}
	if integrators.held == nil {
		integrators.held = map[string]bool{}
	}
	integrators.held[key] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			integrators.Lock()
			delete(integrators.held, key)
			integrators.Unlock()
		})
	}, true, nil
}
