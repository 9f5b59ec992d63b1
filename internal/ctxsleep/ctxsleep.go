// Package ctxsleep waits out a delay unless a context ends first: the one
// wait the model caller's retries and the notifier's redeliveries share.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, when it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
