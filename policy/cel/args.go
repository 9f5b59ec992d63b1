package cel

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxArgsDepth bounds the nesting of arguments the expressions read; the
// runtime itself refuses arguments deeper than 256 levels.
const maxArgsDepth = 256

// argsParser reads a request's arguments into Go values for CEL: objects
// as map[string]any, arrays as []any, integers that fit as int64, other
// numbers as float64. It exists because encoding/json's decoder costs
// several allocations per request before it reads a byte; a string with
// no escape costs one, and one with an escape is handed to
// encoding/json. Anything that is not exactly one JSON value is an error.
type argsParser struct {
	data []byte
	i    int
}

var errArgsSyntax = errors.New("the arguments are not valid JSON")

func parseArgs(data []byte) (any, error) {
	p := &argsParser{data: data}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.data) {
		return nil, errArgsSyntax
	}
	return v, nil
}

func (p *argsParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *argsParser) value(depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, fmt.Errorf("the arguments are nested deeper than %d levels", maxArgsDepth)
	}
	p.space()
	if p.i >= len(p.data) {
		return nil, errArgsSyntax
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, errArgsSyntax
}

// object parses an object from its '{', refusing a repeated key.
func (p *argsParser) object(depth int) (any, error) {
	p.i++
	m := map[string]any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.space()
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, errArgsSyntax
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("the arguments repeat the key %.40q", k)
		}
		m[k] = v
		end, err := p.next('}')
		if err != nil {
			return nil, err
		}
		if end {
			return m, nil
		}
	}
}

// array parses an array from its '['.
func (p *argsParser) array(depth int) (any, error) {
	p.i++
	var l []any
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return []any{}, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
		end, err := p.next(']')
		if err != nil {
			return nil, err
		}
		if end {
			return l, nil
		}
	}
}

// next reads what follows a member of an object or array: its closing
// byte (end) or a comma.
func (p *argsParser) next(closing byte) (end bool, err error) {
	p.space()
	switch {
	case p.i >= len(p.data):
		return false, errArgsSyntax
	case p.data[p.i] == closing:
		p.i++
		return true, nil
	case p.data[p.i] != ',':
		return false, errArgsSyntax
	}
	p.i++
	return false, nil
}

// number parses a JSON number.
func (p *argsParser) number() (any, error) {
	start := p.i
	for p.i < len(p.data) {
		c := p.data[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	tok := p.data[start:p.i]
	if !json.Valid(tok) {
		return nil, errArgsSyntax
	}
	return number(json.Number(tok))
}

func (p *argsParser) literal(word string, v any) (any, error) {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return nil, errArgsSyntax
	}
	p.i += len(word)
	return v, nil
}

// str reads a JSON string at p.i.
func (p *argsParser) str() (string, error) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", errArgsSyntax
	}
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '"':
			p.i++
			if !escaped {
				raw := p.data[start+1 : p.i-1]
				if !utf8.Valid(raw) {
					return "", errors.New("the arguments are not valid UTF-8")
				}
				return string(raw), nil
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.i], &s); err != nil {
				return "", errArgsSyntax
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", errArgsSyntax
		default:
			p.i++
		}
	}
	return "", errArgsSyntax
}
