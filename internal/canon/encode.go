package canon

// emit appends the canonical form of node i. With html, it escapes <, > and &
// and the two JavaScript line terminators as encoding/json does by default.
func (p *parser) emit(dst []byte, i int, html bool) []byte {
	n := &p.nodes[i]
	switch n.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindFalse:
		return append(dst, "false"...)
	case kindTrue:
		return append(dst, "true"...)
	case kindNumber:
		return append(dst, n.str...)
	case kindString:
		return appendString(dst, n.str, html)
	case kindArray:
		dst = append(dst, '[')
		for j, e := range p.elems[n.a:n.b] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = p.emit(dst, e, html)
		}
		return append(dst, ']')
	default: // kindObject
		dst = append(dst, '{')
		for j, m := range p.members[n.a:n.b] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key, html)
			dst = append(dst, ':')
			dst = p.emit(dst, m.val, html)
		}
		return append(dst, '}')
	}
}

// safePolicy and safeHTML mark the bytes copied through unescaped. Bytes of
// multi-byte characters are safe except, with HTML escaping, 0xE2, which may
// start U+2028 or U+2029 and is looked at more closely.
var safePolicy, safeHTML = safeSets()

func safeSets() (policy, html [256]bool) {
	for c := 0x20; c < 256; c++ {
		policy[c] = c != '"' && c != '\\'
		html[c] = policy[c] && c != '<' && c != '>' && c != '&' && c != 0xE2
	}
	return policy, html
}

const hexDigits = "0123456789abcdef"

// appendString appends s, which is valid UTF-8, as a quoted JSON string.
func appendString(dst, s []byte, html bool) []byte {
	safe := &safePolicy
	if html {
		safe = &safeHTML
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safe[c] {
			i++
			continue
		}
		if c == 0xE2 {
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', '8'+(s[i+2]-0xA8))
				i += 3
				start = i
				continue
			}
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
