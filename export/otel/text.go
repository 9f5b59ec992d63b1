package otel

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/internal/textcut"
)

// DefaultMaxText is the bound on one text attribute when Config.MaxText is 0.
const DefaultMaxText = 1024

// truncate cuts s to at most max bytes on a rune boundary and, when it cut,
// says how many bytes it left out: "…[truncated: N bytes]". Invalid UTF-8
// is replaced first, so an attribute is always valid UTF-8.
func truncate(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	kept := textcut.Prefix(s, max)
	return fmt.Sprintf("%s…[truncated: %d bytes]", kept, len(s)-len(kept))
}

// safeName reports whether s may stand in a span name: a short identifier
// a developer registered (a tool or a model name), never free text.
func safeName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-:/", c) >= 0) {
			return false
		}
	}
	return true
}
