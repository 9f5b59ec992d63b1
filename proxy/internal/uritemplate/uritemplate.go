// Package uritemplate compiles an RFC 6570 URI template to a matcher for
// the URIs it expands to, and orders two matching templates by how
// specific they are: the proxy routes a resource URI to the server whose
// template matches it most specifically.
package uritemplate

import (
	"regexp"
	"strings"
)

// Template is a URI template compiled to match URIs.
type Template struct {
	// Raw is the template as the server wrote it.
	Raw string
	re  *regexp.Regexp
	// literal counts the template's literal characters; broad counts its
	// expressions that match across '/' (reserved and fragment
	// expansion, path segments). More literal, then less broad, is more
	// specific.
	literal, broad int
}

// Compile compiles an RFC 6570 template to a matcher for the URIs
// it expands to, or nil for one it cannot read.
func Compile(t string) *Template {
	var b strings.Builder
	b.WriteString("^")
	out := &Template{Raw: t}
	for i := 0; i < len(t); {
		if t[i] != '{' {
			j := strings.IndexByte(t[i:], '{')
			if j < 0 {
				j = len(t) - i
			}
			lit := t[i : i+j]
			if strings.ContainsRune(lit, '}') {
				return nil
			}
			b.WriteString(regexp.QuoteMeta(lit))
			out.literal += len(lit)
			i += j
			continue
		}
		end := strings.IndexByte(t[i:], '}')
		if end < 2 {
			return nil
		}
		expr := t[i+1 : i+end]
		i += end + 1
		op := byte(0)
		if strings.ContainsRune("+#./;?&", rune(expr[0])) {
			op, expr = expr[0], expr[1:]
		}
		if expr == "" {
			return nil
		}
		switch op {
		case 0:
			b.WriteString(`[^/?#]*`)
		case '+':
			b.WriteString(`.*`)
			out.broad++
		case '#':
			b.WriteString(`(?:#.*)?`)
			out.broad++
		case '.':
			b.WriteString(`(?:\.[^/?#]*)*`)
		case '/':
			b.WriteString(`(?:/[^?#]*)*`)
			out.broad++
		case ';':
			b.WriteString(`(?:;[^/?#]*)*`)
		case '?':
			b.WriteString(`(?:\?[^#]*)?`)
		case '&':
			b.WriteString(`(?:&[^#]*)*`)
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	out.re = re
	return out
}

// MoreSpecific orders two matching templates: 1 when a is more specific,
// -1 when b is, 0 when neither.
func MoreSpecific(a, b *Template) int {
	switch {
	case a.literal != b.literal:
		if a.literal > b.literal {
			return 1
		}
		return -1
	case a.broad != b.broad:
		if a.broad < b.broad {
			return 1
		}
		return -1
	}
	return 0
}

// Match says whether uri is one the template expands to.
func (t *Template) Match(uri string) bool { return t.re.MatchString(uri) }
