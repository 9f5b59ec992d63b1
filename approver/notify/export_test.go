package notify

import (
	"context"
	"net/netip"
)

// SetLookup makes cfg's notifier resolve plain-http hosts with fn.
func SetLookup(cfg *Config, fn func(ctx context.Context, host string) ([]netip.Addr, error)) {
	cfg.lookup = fn
}
