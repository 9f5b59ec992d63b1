package disclosure

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// node is one JSON value with object members kept in the tool's order and
// numbers kept as written, so a result nothing was taken from encodes
// back to what the tool meant.
type node struct {
	kind    byte // 'o' object, 'a' array, 's' string, 'l' any other literal
	members []member
	items   []*node
	str     string
	lit     json.RawMessage
}

type member struct {
	key string
	val *node
}

// parse decodes raw into a tree.
func parse(raw []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("more than one JSON value")
	}
	return n, nil
}

const maxDepth = 512

func parseValue(dec *json.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{kind: 'a'}
		if t == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			var key string
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key = k.(string)
			}
			v, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if n.kind == 'o' {
				n.members = append(n.members, member{key, v})
			} else {
				n.items = append(n.items, v)
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return n, nil
	case string:
		return &node{kind: 's', str: t}, nil
	case json.Number:
		return &node{kind: 'l', lit: json.RawMessage(t)}, nil
	case bool:
		return &node{kind: 'l', lit: json.RawMessage(strconv.FormatBool(t))}, nil
	default:
		return &node{kind: 'l', lit: json.RawMessage("null")}, nil
	}
}

// encode writes n as JSON.
func (n *node) encode(b *bytes.Buffer) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, m := range n.members {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.key)
			b.WriteByte(':')
			m.val.encode(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, v := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			v.encode(b)
		}
		b.WriteByte(']')
	case 's':
		writeString(b, n.str)
	default:
		b.Write(n.lit)
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

// bytesOf is n encoded.
func (n *node) bytesOf() json.RawMessage {
	var b bytes.Buffer
	n.encode(&b)
	return b.Bytes()
}

// escapeToken escapes one JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// splitPointer splits a JSON pointer into its unescaped tokens.
func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New("a JSON pointer starts with /")
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}
