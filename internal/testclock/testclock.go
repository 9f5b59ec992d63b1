// Package testclock is the clock tests move by hand, for the injected
// clocks (EngineConfig.Now, the proxy's Options.Now and the like). Only
// tests import it.
package testclock

import (
	"sync"
	"time"
)

// Clock is a clock moved by hand, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New starts a clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
