package trace

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendTerminalSafeJSON appends the compact JSON text src, as json.Marshal
// or a json.Encoder writes it, to dst with every character Sanitize would
// escape written as a JSON \u escape instead: controls, DEL, format and
// invisible characters, line separators, private use, unassigned code
// points, a variation selector that does not directly follow a base, and
// each combining mark past the fourth on a base. Each string is judged as
// Sanitize judges it alone, so its opening quote is not a base a variation
// selector may attach to, and a JSON escape in it counts as one of
// Sanitize's escapes. An invalid UTF-8 byte becomes \ufffd.
//
// The result is JSON that decodes to the same values and is safe to print on
// a terminal. It is the one encoder for every JSON line agentrt writes: the
// JSONL observer's and the operator command's -json output.
//
// src must be compact: a raw line break or other control between tokens
// would itself be escaped, and the result would no longer be JSON.
func AppendTerminalSafeJSON(dst, src []byte) []byte {
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
