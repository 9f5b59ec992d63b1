package agentrt

import (
	"context"
	"time"
)

// SetModelSleep makes the accounting caller built from cfg wait between
// attempts with f instead of a timer, so tests never sleep.
func SetModelSleep(cfg *ModelConfig, f func(ctx context.Context, d time.Duration) error) {
	cfg.sleep = f
}

// CostOf prices usage as the accounting caller does.
func CostOf(p Price, u Usage) Micros { return costOf(p, u) }
