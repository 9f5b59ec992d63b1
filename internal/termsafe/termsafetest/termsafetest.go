// Package termsafetest is the tests' oracle of what a terminal must never
// be handed raw. It lists the classes of runes by hand, apart from
// internal/termsafe, so that a test of trace.Sanitize or of eventlog's
// observers does not check the implementation against itself.
package termsafetest

import "unicode"

// Forbidden says why r must never appear raw in a line printed to a
// terminal, or "" when it may.
func Forbidden(r rune) string {
	switch {
	case r < 0x20 || r == 0x7F:
		return "C0 or DEL"
	case r >= 0x80 && r <= 0x9F:
		return "C1"
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return "bidi control"
	case r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E, r == 0x00AD, r == 0x034F:
		return "zero-width or invisible"
	case r == 0x2028 || r == 0x2029:
		return "line or paragraph separator"
	case r >= 0xE0000 && r <= 0xE007F:
		return "tag"
	case r >= 0xE0100 && r <= 0xE01EF:
		return "ideographic variation selector"
	case r >= 0x180B && r <= 0x180D, r == 0x180F:
		return "Mongolian free variation selector"
	case unicode.Is(unicode.Cf, r):
		return "format character"
	case unicode.Is(unicode.Co, r):
		return "private use"
	}
	return ""
}
