package canon

import (
	"bytes"
	"slices"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one decoded value. Strings hold their unescaped bytes and numbers
// their literal; arrays and objects hold the range [a, b) of their children
// in parser.elems or parser.members.
type node struct {
	kind kind
	str  []byte
	a, b int
}

// member is an object member: the unescaped key and the node of the value.
type member struct {
	key []byte
	val int
}

// parser decodes a document into a flat tree. It is pooled: a document needs
// a few slices that are much cheaper to reuse than to grow again.
type parser struct {
	src      []byte
	pos      int
	depth    int
	keepLast bool

	nodes   []node
	elems   []int    // array children, contiguous per array
	members []member // object members, sorted and contiguous per object

	// Scratch stacks for the container being read; a container's children
	// move to elems or members once it closes.
	elemStack   []int
	memberStack []member
	memberHigh  int // deepest use of memberStack, to clear on release

	ubuf []byte // unescaped bytes of strings that had escapes
	out  []byte // output buffer for Hash

	// Faults found while parsing that are reported only once the whole
	// document is known to be well-formed, in the order of Check.
	surrogate bool
	duplicate bool
	badNumber string
}

var parsers = sync.Pool{New: func() any { return new(parser) }}

func getParser(keepLast bool) *parser {
	p := parsers.Get().(*parser)
	p.keepLast = keepLast
	return p
}

// release drops every reference into the caller's document and returns the
// parser to the pool, unless one huge document left it too big to keep.
func (p *parser) release() {
	clear(p.nodes)
	clear(p.members)
	clear(p.memberStack[:p.memberHigh])
	*p = parser{
		nodes:       p.nodes[:0],
		elems:       p.elems[:0],
		members:     p.members[:0],
		elemStack:   p.elemStack[:0],
		memberStack: p.memberStack[:0],
		ubuf:        p.ubuf[:0],
		out:         p.out[:0],
	}
	const keep = 1 << 16
	if cap(p.nodes) > keep || cap(p.elems) > keep || cap(p.members) > keep ||
		cap(p.ubuf) > 1<<20 || cap(p.out) > 1<<20 {
		return
	}
	parsers.Put(p)
}

func refuse(reason string) error { return &Error{Reason: reason} }

// parse checks raw and decodes it, returning the index of the root node.
func (p *parser) parse(raw []byte) (int, error) {
	if tooDeep(raw) {
		return 0, refuse(ReasonDepth)
	}
	if !utf8.Valid(raw) {
		return 0, refuse(ReasonUTF8)
	}
	p.src = raw
	root, ok := p.value()
	if ok {
		p.skipSpace()
		ok = p.pos == len(raw)
	}
	switch {
	case !ok:
		return 0, refuse(ReasonSyntax)
	case p.surrogate:
		return 0, refuse(ReasonSurrogate)
	case p.duplicate:
		return 0, refuse(ReasonDuplicateKey)
	case p.badNumber != "":
		return 0, refuse(p.badNumber)
	}
	return root, nil
}

// tooDeep counts brackets outside strings without parsing, so that depth is
// refused first and the same way whether or not the rest is well-formed.
func tooDeep(raw []byte) bool {
	depth := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

func (p *parser) add(n node) int {
	p.nodes = append(p.nodes, n)
	return len(p.nodes) - 1
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value reads one value after optional whitespace. It reports false for
// malformed input; every other fault is recorded and reading goes on.
func (p *parser) value() (int, bool) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return 0, false
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, ok := p.string()
		if !ok {
			return 0, false
		}
		return p.add(node{kind: kindString, str: s}), true
	case c == 't':
		return p.literal("true", kindTrue)
	case c == 'f':
		return p.literal("false", kindFalse)
	case c == 'n':
		return p.literal("null", kindNull)
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return 0, false
}

func (p *parser) literal(word string, k kind) (int, bool) {
	if !bytes.HasPrefix(p.src[p.pos:], []byte(word)) {
		return 0, false
	}
	p.pos += len(word)
	return p.add(node{kind: k}), true
}

// enter guards the recursion. tooDeep has already refused anything deeper,
// so this only matters if the two ever disagree.
func (p *parser) enter() bool {
	p.depth++
	return p.depth <= MaxDepth
}

// empty reports whether the container just opened closes at once (with
// close, after optional whitespace), and if so reads past it.
func (p *parser) empty(close byte) bool {
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == close {
		p.pos++
		return true
	}
	return false
}

// next reads what follows a container's element, after optional
// whitespace: close ends the container (end), a comma means another
// element follows, and anything else, or the end of the input, is
// malformed (not ok).
func (p *parser) next(close byte) (end, ok bool) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return false, false
	}
	c := p.src[p.pos]
	p.pos++
	return c == close, c == close || c == ','
}

func (p *parser) array() (int, bool) {
	p.pos++ // [
	if !p.enter() {
		return 0, false
	}
	idx := p.add(node{kind: kindArray})
	mark := len(p.elemStack)
	if !p.empty(']') {
		for {
			v, ok := p.value()
			if !ok {
				return 0, false
			}
			p.elemStack = append(p.elemStack, v)
			end, ok := p.next(']')
			if !ok {
				return 0, false
			}
			if end {
				break
			}
		}
	}
	a := len(p.elems)
	p.elems = append(p.elems, p.elemStack[mark:]...)
	p.elemStack = p.elemStack[:mark]
	p.nodes[idx].a, p.nodes[idx].b = a, len(p.elems)
	p.depth--
	return idx, true
}

func compareMembers(x, y member) int { return bytes.Compare(x.key, y.key) }

func (p *parser) object() (int, bool) {
	p.pos++ // {
	if !p.enter() {
		return 0, false
	}
	idx := p.add(node{kind: kindObject})
	mark := len(p.memberStack)
	if !p.empty('}') {
		for {
			p.skipSpace()
			if p.pos >= len(p.src) || p.src[p.pos] != '"' {
				return 0, false
			}
			key, ok := p.string()
			if !ok {
				return 0, false
			}
			p.skipSpace()
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return 0, false
			}
			p.pos++
			v, ok := p.value()
			if !ok {
				return 0, false
			}
			p.memberStack = append(p.memberStack, member{key: key, val: v})
			p.memberHigh = max(p.memberHigh, len(p.memberStack))
			end, ok := p.next('}')
			if !ok {
				return 0, false
			}
			if end {
				break
			}
		}
	}
	ms := p.memberStack[mark:]
	// A stable sort keeps repeated keys in document order, so the last of a
	// run is the value encoding/json would have kept.
	if !slices.IsSortedFunc(ms, compareMembers) {
		slices.SortStableFunc(ms, compareMembers)
	}
	a := len(p.members)
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(m.key, ms[i+1].key) {
			if !p.keepLast {
				p.duplicate = true
			}
			continue
		}
		p.members = append(p.members, m)
	}
	p.memberStack = p.memberStack[:mark]
	p.nodes[idx].a, p.nodes[idx].b = a, len(p.members)
	p.depth--
	return idx, true
}

// string reads a string at the opening quote and returns its unescaped
// bytes: a slice of the input when it has no escapes, else of ubuf.
func (p *parser) string() ([]byte, bool) {
	src := p.src
	start := p.pos + 1
	i := start
	for i < len(src) {
		c := src[i]
		if c == '"' {
			p.pos = i + 1
			return src[start:i:i], true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, false
		}
		i++
	}
	if i >= len(src) {
		return nil, false
	}
	u := len(p.ubuf)
	p.ubuf = append(p.ubuf, src[start:i]...)
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"':
			p.pos = i + 1
			// Cap the slice so that later appends to ubuf never write into it.
			return p.ubuf[u:len(p.ubuf):len(p.ubuf)], true
		case c < 0x20:
			return nil, false
		case c != '\\':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\\' && src[j] >= 0x20 {
				j++
			}
			p.ubuf = append(p.ubuf, src[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(src) {
			return nil, false
		}
		switch src[i+1] {
		case '"', '\\', '/':
			p.ubuf = append(p.ubuf, src[i+1])
		case 'b':
			p.ubuf = append(p.ubuf, '\b')
		case 'f':
			p.ubuf = append(p.ubuf, '\f')
		case 'n':
			p.ubuf = append(p.ubuf, '\n')
		case 'r':
			p.ubuf = append(p.ubuf, '\r')
		case 't':
			p.ubuf = append(p.ubuf, '\t')
		case 'u':
			r, ok := hex4(src, i+2)
			if !ok {
				return nil, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r = p.lowSurrogate(r, i)
				if r != utf8.RuneError {
					i += 6
				}
			}
			p.ubuf = utf8.AppendRune(p.ubuf, r)
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return nil, false
}

// lowSurrogate completes the high surrogate hi with an escaped low surrogate
// at src[i:]. Anything else is an unpaired surrogate: it is recorded and the
// reading goes on, so that malformed input later on still reports first.
func (p *parser) lowSurrogate(hi rune, i int) rune {
	src := p.src
	if hi < 0xDC00 && i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
		if lo, ok := hex4(src, i+2); ok && 0xDC00 <= lo && lo <= 0xDFFF {
			return utf16.DecodeRune(hi, lo)
		}
	}
	p.surrogate = true
	return utf8.RuneError
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits is the run of digits that starts src[i:] (empty for none).
func digits(src []byte, i int) []byte {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	return src[i:j]
}

func (p *parser) number() (int, bool) {
	src := p.src
	start := p.pos
	i := start
	if src[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i >= len(src):
		return 0, false
	case src[i] == '0':
		i++
	case isDigit(src[i]):
		i += len(digits(src, i))
	default:
		return 0, false
	}
	intDigits := src[intStart:i]
	var fracDigits, expDigits []byte
	if i < len(src) && src[i] == '.' {
		i++
		if fracDigits = digits(src, i); len(fracDigits) == 0 {
			return 0, false
		}
		i += len(fracDigits)
	}
	expNeg := false
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			expNeg = src[i] == '-'
			i++
		}
		if expDigits = digits(src, i); len(expDigits) == 0 {
			return 0, false
		}
		i += len(expDigits)
	}
	p.pos = i
	lit := src[start:i:i]
	if p.badNumber == "" {
		p.badNumber = numberFault(len(lit), intDigits, fracDigits, expDigits, expNeg)
	}
	return p.add(node{kind: kindNumber, str: lit}), true
}

// numberFault returns the reason a number literal is refused, or "". The
// exponent is bounded as written and as implied: the decimal exponent of the
// first significant digit, so that a long run of digits cannot carry a value
// past the bound that its written exponent keeps inside it.
func numberFault(n int, intDigits, fracDigits, expDigits []byte, expNeg bool) string {
	if n > MaxNumberLen {
		return ReasonNumberLength
	}
	// Exponent digits are unbounded in the grammar; strip the leading zeros
	// and give up on anything with more than six digits left, which is past
	// the bound whatever the mantissa (it has at most MaxNumberLen digits).
	digits := bytes.TrimLeft(expDigits, "0")
	if len(digits) > 6 {
		return ReasonNumberExponent
	}
	exp := 0
	for _, c := range digits {
		exp = exp*10 + int(c-'0')
	}
	if expNeg {
		exp = -exp
	}
	if exp > MaxExponent || exp < -MaxExponent {
		return ReasonNumberExponent
	}
	var implied int
	if len(intDigits) > 1 || intDigits[0] != '0' {
		implied = exp + len(intDigits) - 1 // JSON integers have no leading zeros
	} else {
		k := bytes.IndexFunc(fracDigits, func(r rune) bool { return r != '0' })
		if k < 0 {
			return "" // zero has no first significant digit
		}
		implied = exp - k - 1
	}
	if implied > MaxExponent || implied < -MaxExponent {
		return ReasonNumberExponent
	}
	return ""
}
