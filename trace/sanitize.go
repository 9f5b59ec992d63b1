package trace

import (
	"github.com/agentrt/agentrt/internal/termsafe"
	"github.com/agentrt/agentrt/internal/textcut"
)

// Sanitize makes text that a model, a policy or a server chose safe to print on
// an operator's terminal. The result is valid UTF-8 on one line, and every
// character in it either shows as itself or is spelled out as a visible escape.
//
// The rules, in order:
//
//   - A backslash becomes `\\`. Every other backslash in the result starts an
//     escape, so text that spells out `\u{202E}` cannot pass for a real one.
//   - Each invalid UTF-8 byte becomes U+FFFD.
//   - Newline, carriage return and tab become `\n`, `\r` and `\t`.
//   - These become `\u{XXXX}` (uppercase hex, at least four digits):
//     the other C0 controls, DEL and the C1 controls U+0080–U+009F;
//     every format character (category Cf), which covers the bidi
//     embeddings, overrides, isolates and marks (U+202A–U+202E,
//     U+2066–U+2069, U+200E, U+200F, U+061C), the zero-width characters
//     U+200B–U+200D (ZWSP, ZWNJ, ZWJ), U+2060–U+2064, U+FEFF, U+180E,
//     the soft hyphen U+00AD and the tag block U+E0000–U+E007F;
//     the line and paragraph separators U+2028 and U+2029;
//     private-use characters (category Co), whose look depends on the
//     operator's font;
//     code points unassigned in Go's Unicode tables (see [unicode.Version]),
//     including noncharacters, except those in U+1F000–U+1FAFF and
//     U+1FC00–U+1FFFD, which Unicode reserves for future emoji;
//     and these invisible characters of other categories: U+034F (combining
//     grapheme joiner), the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0,
//     the Khmer inherent vowels U+17B4 and U+17B5, the ideographic
//     variation selectors U+E0100–U+E01EF, and the Mongolian free variation
//     selectors U+180B–U+180D and U+180F, which are nonspacing marks and so
//     would otherwise ride, up to four at a time, invisibly on any base.
//   - A variation selector U+FE00–U+FE0F is kept only when it directly follows
//     a character printed as itself that is not a combining mark, so "❤️" and
//     the keycap "1️⃣" survive. Any other, such as a second selector in a row,
//     is escaped; a run of selectors after one emoji is a known way to smuggle
//     hidden bytes.
//   - A base character keeps at most four combining marks (categories Mn, Mc
//     and Me). The rest of the run is dropped and replaced by the marker
//     `\[+N combining marks dropped]`. An escape counts as a new base, so
//     marks after it start a new run.
//
// Everything else passes unchanged: letters, digits, punctuation, symbols and
// spaces of every script (Latin, Cyrillic, Greek, CJK, Arabic, Hebrew,
// Devanagari and Thai with their usual marks, Korean), and emoji, including
// flags made of regional indicators and skin-tone modifiers. Because ZWJ is
// invisible formatting, an emoji ZWJ sequence such as a family shows its parts
// with `\u{200D}` between them, and a subdivision flag such as England shows
// its tag characters as escapes.
//
// Sanitize is not idempotent: sanitizing again doubles each backslash. A string
// of printable ASCII without a backslash is returned as is, without allocating.
func Sanitize(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '\\' {
		i++
	}
	if i == len(s) {
		return s
	}
	dst := make([]byte, i, len(s)+16)
	copy(dst, s[:i])
	return string(termsafe.Append(dst, s[i:], i > 0, true))
}

// Truncate returns s cut to at most n bytes, including the "…" mark added when
// it cuts. It never splits a UTF-8 sequence; invalid bytes count as one rune
// each, as in a range loop. When n is too small for the mark, Truncate
// returns the longest whole-rune prefix that fits, without a mark.
//
// Truncating before Sanitize keeps escapes whole; truncating after it bounds
// the printed size but may cut an escape short.
func Truncate(s string, n int) string { return textcut.Truncate(s, n) }
