package testclock

import (
	"sync"
	"testing"
	"time"
)

// Now reads what New set and every Advance added, from any goroutine.
func TestClock_AdvanceMovesNow(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	c := New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Advance(time.Second); _ = c.Now() }()
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("Now = %v, want %v", got, t0.Add(10*time.Second))
	}
}
