// Package textcut is the one way agentrt cuts text to a byte bound: never
// inside a UTF-8 sequence, the cut marked. trace.Truncate is this package's
// Truncate; every unexported clip in the tree calls it too.
package textcut

import "unicode/utf8"

// Mark ends a string Truncate cut.
const Mark = "…"

// Truncate returns s cut to at most n bytes, including the Mark added when
// it cuts. It never splits a UTF-8 sequence; invalid bytes count as one
// rune each, as in a range loop. When n is too small for the mark, it
// returns the longest whole-rune prefix that fits, without a mark; a
// negative n gives "".
func Truncate(s string, n int) string { return TruncateWith(s, n, Mark) }

// TruncateWith is Truncate with another mark.
func TruncateWith(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	if n < len(mark) {
		return Prefix(s, n)
	}
	return Prefix(s, n-len(mark)) + mark
}

// Prefix is the longest prefix of s of at most n bytes that a range loop
// over s would end a rune at.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	// Find the start of the sequence that s[n] belongs to, if any.
	start := n
	for start > 0 && start > n-utf8.UTFMax+1 && !utf8.RuneStart(s[start]) {
		start--
	}
	if _, size := utf8.DecodeRuneInString(s[start:]); start+size > n {
		return s[:start]
	}
	return s[:n]
}
