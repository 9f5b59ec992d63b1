package termsafe

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxMarks is how many combining marks Sanitize keeps on one base character.
// Real text rarely stacks more than three (Vietnamese, Devanagari, pointed
// Hebrew); "Zalgo" text stacks hundreds to paint over neighbouring lines.
const MaxMarks = 4

// Append appends s to dst under trace.Sanitize's rules. afterBase says the
// text already in dst ends with a character printed as itself. When
// backslashes is false a backslash is kept as is; that is only safe when s is
// JSON, where a literal backslash is always written `\\` and `\u{` or `\[`
// never occurs, so Sanitize's escapes stay unambiguous.
func Append(dst []byte, s string, afterBase, backslashes bool) []byte {
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
		if st.marks >= MaxMarks {
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

// AppendJSON is trace.AppendTerminalSafeJSON: compact JSON src appended
// to dst with every character Sanitize would escape written as a JSON \u
// escape.
func AppendJSON(dst, src []byte) []byte {
	var st runState
	inString := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"':
			inString = !inString
			dst = append(dst, c)
			st.marks, st.base = 0, false
			i++
			continue
		case c == '\\' && inString:
			n := 2
			if i+1 < len(src) && src[i+1] == 'u' {
				n = 6
			}
			n = min(n, len(src)-i)
			dst = append(dst, src[i:i+n]...)
			st.marks, st.base = 0, false
			i += n
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = appendJSONEscape(dst, utf8.RuneError)
			st.marks, st.base = 0, false
		case st.next(r) == actKeep:
			dst = append(dst, src[i:i+size]...)
		default:
			dst = appendJSONEscape(dst, r)
		}
		i += size
	}
	return dst
}

func appendJSONEscape(dst []byte, r rune) []byte {
	if r > 0xFFFF {
		r1, r2 := utf16.EncodeRune(r)
		return appendJSONEscape(appendJSONEscape(dst, r1), r2)
	}
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}
