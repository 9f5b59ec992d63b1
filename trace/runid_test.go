package trace

import (
	"strings"
	"testing"
)

// The short id is a prefix of the id that tells runs apart: a proxy
// session's readable head through its last separator and 8 characters of
// what follows, or 16 characters of an id without a separator, past the
// 12 hex digits of the engine's millisecond clock.
func TestShortRunID_KeepsTheReadableHeadAndEnoughToTellRunsApart(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"claude-desktop.4f1e9a0c77d2b315", "claude-desktop.4f1e9a0c"},
		{"0190aabbccdd5e6f7a8b9c0d1e2f3a4b", "0190aabbccdd5e6f"},
		{"550e8400-e29b-41d4-a716-446655440000", "550e8400-e29b-41d4-a716-44665544"},
		{"job:é€ñøπ∑ßåçdone", "job:é€ñøπ∑ßå"},
		{"run-1", "run-1"},
		{"short", "short"},
		{"", ""},
	} {
		got := ShortRunID(c.id)
		if got != c.want || !strings.HasPrefix(c.id, got) {
			t.Errorf("ShortRunID(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}
