package enginekit

import (
	"fmt"
	"sync"
	"time"
)

// TickingClock is a fake clock that moves one step each time it is read,
// so every row and event a fixture writes has its own time. The command
// line's and the OpenTelemetry exporter's golden fixtures use it.
type TickingClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

// TickFrom is a TickingClock whose first reading is start plus step.
func TickFrom(start time.Time, step time.Duration) *TickingClock {
	return &TickingClock{t: start, step: step}
}

func (c *TickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// Clone is a TickingClock that goes on from where c stands, independently.
func (c *TickingClock) Clone() *TickingClock {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &TickingClock{t: c.t, step: c.step}
}

// IDCounter makes ids by formatting a count from 1 with one verb, safe
// for concurrent use: with "id%04d" id0001, id0002, ...
type IDCounter struct {
	mu     sync.Mutex
	n      int
	format string
}

// CountIDs is an IDCounter that formats with format.
func CountIDs(format string) *IDCounter { return &IDCounter{format: format} }

func (c *IDCounter) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf(c.format, c.n)
}

// Clone is an IDCounter that goes on from where c stands, independently.
func (c *IDCounter) Clone() *IDCounter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &IDCounter{n: c.n, format: c.format}
}
