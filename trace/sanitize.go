package trace

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/textcut"
)

// maxMarks is how many combining marks Sanitize keeps on one base character.
// Real text rarely stacks more than three (Vietnamese, Devanagari, pointed
// Hebrew); "Zalgo" text stacks hundreds to paint over neighbouring lines.
const maxMarks = 4

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
	return string(appendSanitized(dst, s[i:], i > 0, true))
}

// appendSanitized appends s to dst under Sanitize's rules. afterBase says the
// text already in dst ends with a character printed as itself. When
// backslashes is false a backslash is kept as is; that is only safe when s is
// JSON, where a literal backslash is always written `\\` and `\u{` or `\[`
// never occurs, so Sanitize's escapes stay unambiguous.
func appendSanitized(dst []byte, s string, afterBase, backslashes bool) []byte {
	st := runState{base: afterBase}
	dropped := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		act := st.next(r)
		if act == actDrop {
			dropped++
			continue
		}
		if dropped > 0 {
			dst = appendDropMarker(dst, dropped)
			dropped = 0
		}
		switch {
		case act == actKeep && r == '\\' && backslashes:
			dst = append(dst, '\\', '\\')
		case act == actKeep:
			// r is U+FFFD for an invalid byte, which is what we want.
			dst = utf8.AppendRune(dst, r)
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = appendEscape(dst, r)
		}
	}
	if dropped > 0 {
		dst = appendDropMarker(dst, dropped)
	}
	return dst
}

// appendEscape appends `\u{XXXX}`: uppercase hex, four to six digits.
func appendEscape(dst []byte, r rune) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, `\u{`...)
	digits := 4
	for v := uint32(r) >> 16; v > 0; v >>= 4 {
		digits++
	}
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		dst = append(dst, hex[(uint32(r)>>shift)&0xF])
	}
	return append(dst, '}')
}

func appendDropMarker(dst []byte, n int) []byte {
	dst = append(dst, `\[+`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, " combining marks dropped]"...)
}

// action is what to do with one rune.
type action uint8

const (
	actKeep   action = iota // print it as itself
	actEscape               // print a visible escape instead
	actDrop                 // a combining mark past the limit
)

// runState follows what the terminal will stack the next rune on.
type runState struct {
	marks int  // combining marks printed on the current base
	base  bool // the last thing printed is a character shown as itself
}

func (st *runState) next(r rune) action {
	if mustEscape(r) {
		// The escape is ASCII: a fresh base, but not one a variation
		// selector may attach to.
		st.marks, st.base = 0, false
		return actEscape
	}
	if r >= 0xFE00 && r <= 0xFE0F {
		if st.base && st.marks == 0 {
			st.marks = 1
			return actKeep
		}
		st.marks, st.base = 0, false
		return actEscape
	}
	if unicode.IsMark(r) {
		if st.marks >= maxMarks {
			return actDrop
		}
		st.marks++
		return actKeep
	}
	st.marks, st.base = 0, true
	return actKeep
}

// mustEscape reports whether r is never printed as itself. Variation
// selectors U+FE00–U+FE0F depend on context and are handled by runState.
func mustEscape(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 0x20 || r == 0x7F
	}
	switch {
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r == 0x3164, r == 0xFFA0:
		return true
	case r >= 0xE0100 && r <= 0xE01EF, r >= 0x180B && r <= 0x180D, r == 0x180F:
		return true
	case unicode.IsGraphic(r):
		return false
	}
	// Not graphic: a control, format, private-use or surrogate code point,
	// a line or paragraph separator, or unassigned.
	if unassigned(r) && (r >= 0x1F000 && r <= 0x1FAFF || r >= 0x1FC00 && r <= 0x1FFFD) {
		return false
	}
	return true
}

// unassigned reports whether r is in no general category of Go's tables.
// (unicode.C cannot be used here: its table also covers unassigned ranges.)
func unassigned(r rune) bool {
	return !unicode.IsGraphic(r) &&
		!unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp)
}

// Truncate returns s cut to at most n bytes, including the "…" mark added when
// it cuts. It never splits a UTF-8 sequence; invalid bytes count as one rune
// each, as in a range loop. When n is too small for the mark, Truncate
// returns the longest whole-rune prefix that fits, without a mark.
//
// Truncating before Sanitize keeps escapes whole; truncating after it bounds
// the printed size but may cut an escape short.
func Truncate(s string, n int) string { return textcut.Truncate(s, n) }
