package ctxsleep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/ctxsleep"
)

// Sleep returns nil once the delay has passed and the context's error as
// soon as it ends, without waiting out the rest.
func TestSleep_EndsWithTheDelayOrTheContext(t *testing.T) {
	if err := ctxsleep.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a finished sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- ctxsleep.Sleep(ctx, time.Hour) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled sleep = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled sleep waited on")
	}
}
