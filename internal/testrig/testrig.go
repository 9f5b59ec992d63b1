// Package testrig holds what the tests of nearly every package set up
// first: a fresh SQLite runs database and a clock they move by hand. It is
// for tests only; nothing else imports it.
package testrig

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/sqlite"
)

// DB creates a runs database in a fresh temporary directory, closed when t
// ends, and returns the writer's store and the file's path.
func DB(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// Clock is a clock that moves only when Advance moves it. It is safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d (back, for a negative d).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
