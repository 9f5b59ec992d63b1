package trace

import "strings"

// ShortRunID is how a text trail prints a run id: a prefix of it that the
// CLI accepts back wherever it takes a run id. An id with a readable head
// (a proxy's "claude-desktop.1f0c…") keeps the text through its last
// separator (. - _ : /) and 8 characters after it. An id without one keeps
// 16 characters: the engine's ids begin with 12 hex digits of the
// millisecond clock, so 8 would print every run begun in the same minute
// alike.
func ShortRunID(id string) string {
	if i := strings.LastIndexAny(id, ".-_:/"); i >= 0 {
		return id[:i+1] + firstRunes(id[i+1:], 8)
	}
	return firstRunes(id, 16)
}

// firstRunes returns the first n runes of s (counting invalid bytes as runes).
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
