package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"
	"unsafe"

	"github.com/agentrt/agentrt/internal/textcut"
)

// timeText is the stored form of a time: RFC3339Nano in UTC, "" for zero.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// parseTime reads a stored time; "" is zero. An unparsable value is an error.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q does not parse", truncate(s, 64))
	}
	return t, nil
}

// encodeJSON encodes v for a JSON column; nil pointers are "".
func encodeJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("agentrt: value will not encode: %w", err)
	}
	if len(b) == 0 {
		return "", nil
	}
	// b is never written again: share it rather than copy it.
	return unsafe.String(&b[0], len(b)), nil
}

func truncate(s string, n int) string { return textcut.Truncate(s, n) }
