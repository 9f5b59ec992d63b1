package cel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	agentrt "github.com/agentrt/agentrt"
	"go.yaml.in/yaml/v3"
)

// Format is how a policy file is written.
type Format string

const (
	// JSON is a policy file in JSON, checked as the runtime checks JSON: no
	// repeated key, no trailing data, valid UTF-8.
	JSON Format = "json"
	// YAML is a policy file in YAML, read as one document with string keys
	// and no anchors, aliases, merge keys or tags beyond the core schema.
	YAML Format = "yaml"
)

// maxTreeDepth bounds the nesting of a policy file; the format itself
// needs five levels.
const maxTreeDepth = 32

type nodeKind int

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k nodeKind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "a list", "a map"}[k]
}

// node is one value of a policy file, in either format, with where it
// starts in the file. An object keeps its keys in file order.
type node struct {
	kind      nodeKind
	line, col int
	// quoted says a string was written in quotes (JSON, or a quoted YAML
	// scalar), so its content starts one column after col.
	quoted bool
	str    string // string value, or a number as written
	b      bool
	items  []*node
	keys   []*node // kindString nodes
	vals   []*node
}

// get returns the value under key and whether it is there.
func (n *node) get(key string) (*node, bool) {
	for i, k := range n.keys {
		if k.str == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// toJSON writes n as JSON (object keys sorted).
func (n *node) toJSON(b *bytes.Buffer) {
	switch n.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		b.WriteString(strconv.FormatBool(n.b))
	case kindNumber:
		b.WriteString(n.str)
	case kindString:
		s, _ := json.Marshal(n.str)
		b.Write(s)
	case kindArray:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.toJSON(b)
		}
		b.WriteByte(']')
	case kindObject:
		idx := make([]int, len(n.keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, c int) bool { return n.keys[idx[a]].str < n.keys[idx[c]].str })
		b.WriteByte('{')
		for j, i := range idx {
			if j > 0 {
				b.WriteByte(',')
			}
			n.keys[i].toJSON(b)
			b.WriteByte(':')
			n.vals[i].toJSON(b)
		}
		b.WriteByte('}')
	}
}

// parseTree reads data in format f into a tree.
func parseTree(data []byte, f Format) (*node, error) {
	switch f {
	case JSON:
		return parseJSONTree(data)
	case YAML:
		return parseYAMLTree(data)
	}
	return nil, &FileError{Reason: fmt.Sprintf("unknown format %q; use json or yaml", f)}
}

// lineIndex turns byte offsets into 1-based lines and columns (columns
// count characters).
type lineIndex struct {
	data   []byte
	starts []int
}

func newLineIndex(data []byte) *lineIndex {
	li := &lineIndex{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

func (li *lineIndex) pos(off int) (line, col int) {
	i := sort.Search(len(li.starts), func(i int) bool { return li.starts[i] > off }) - 1
	return i + 1, utf8.RuneCount(li.data[li.starts[i]:off]) + 1
}

// parseJSONTree checks data as the runtime checks JSON, then walks its
// tokens to keep where each value starts.
func parseJSONTree(data []byte) (*node, error) {
	if err := agentrt.CheckJSON(data); err != nil {
		var je *agentrt.JSONError
		reason := err.Error()
		if errors.As(err, &je) {
			reason = je.Reason
		}
		return nil, &FileError{Reason: "not acceptable JSON: " + reason}
	}
	r := &jsonReader{data: data, idx: newLineIndex(data), dec: json.NewDecoder(bytes.NewReader(data))}
	r.dec.UseNumber()
	n, err := r.value(0)
	if err != nil {
		return nil, &FileError{Reason: "not acceptable JSON: " + err.Error()}
	}
	return n, nil
}

type jsonReader struct {
	data []byte
	idx  *lineIndex
	dec  *json.Decoder
}

// next returns the next token and where it starts.
func (r *jsonReader) next() (json.Token, int, int, error) {
	off := int(r.dec.InputOffset())
	for off < len(r.data) {
		switch r.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	line, col := r.idx.pos(off)
	tok, err := r.dec.Token()
	return tok, line, col, err
}

func (r *jsonReader) value(depth int) (*node, error) {
	tok, line, col, err := r.next()
	if err != nil {
		return nil, err
	}
	return r.build(tok, line, col, depth)
}

func (r *jsonReader) build(tok json.Token, line, col, depth int) (*node, error) {
	if depth > maxTreeDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxTreeDepth)
	}
	n := &node{line: line, col: col}
	switch t := tok.(type) {
	case nil:
		n.kind = kindNull
	case bool:
		n.kind, n.b = kindBool, t
	case json.Number:
		n.kind, n.str = kindNumber, string(t)
	case string:
		n.kind, n.str, n.quoted = kindString, t, true
	case json.Delim:
		switch t {
		case '[':
			n.kind = kindArray
			for r.dec.More() {
				it, err := r.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, it)
			}
		case '{':
			n.kind = kindObject
			for r.dec.More() {
				ktok, kl, kc, err := r.next()
				if err != nil {
					return nil, err
				}
				key, _ := ktok.(string)
				v, err := r.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, &node{kind: kindString, str: key, line: kl, col: kc, quoted: true})
				n.vals = append(n.vals, v)
			}
		}
		if _, err := r.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	}
	return n, nil
}

// parseYAMLTree reads exactly one YAML document and refuses what could make
// it mean something other than what it shows, or cost more than its size:
// repeated keys, anchors and aliases, merge keys, tags beyond the core
// schema, non-string keys, and numbers that are not finite.
func parseYAMLTree(data []byte) (n *node, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = nil, &FileError{Reason: fmt.Sprintf("not acceptable YAML: the parser failed: %v", p)}
		}
	}()
	if !utf8.Valid(data) {
		return nil, &FileError{Reason: "not acceptable YAML: invalid UTF-8"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FileError{Reason: "the file is empty"}
		}
		return nil, &FileError{Reason: "not acceptable YAML: " + err.Error()}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		line, col := more.Line, more.Column
		if err != nil {
			return nil, &FileError{Reason: "not acceptable YAML after the first document: " + err.Error()}
		}
		return nil, &FileError{Line: line, Column: col, Reason: "a second YAML document follows the first; a policy file holds one"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &FileError{Reason: "not acceptable YAML: no document"}
	}
	return fromYAML(doc.Content[0], 0)
}

func yamlErr(y *yaml.Node, format string, args ...any) error {
	return &FileError{Line: y.Line, Column: y.Column, Reason: fmt.Sprintf(format, args...)}
}

func fromYAML(y *yaml.Node, depth int) (*node, error) {
	if depth > maxTreeDepth {
		return nil, yamlErr(y, "nested deeper than %d levels", maxTreeDepth)
	}
	if y.Anchor != "" || y.Kind == yaml.AliasNode {
		return nil, yamlErr(y, "YAML anchors and aliases are not accepted; write each value out")
	}
	n := &node{line: y.Line, col: y.Column}
	switch y.Kind {
	case yaml.MappingNode:
		if y.Tag != "" && y.ShortTag() != "!!map" {
			return nil, yamlErr(y, "the tag %s is not accepted", y.Tag)
		}
		n.kind = kindObject
		seen := map[string]int{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" || k.Anchor != "" {
				if k.ShortTag() == "!!merge" {
					return nil, yamlErr(k, "YAML merge keys (<<) are not accepted; write each key out")
				}
				return nil, yamlErr(k, "a map key must be a string")
			}
			if first, dup := seen[k.Value]; dup {
				return nil, yamlErr(k, "the key %q is repeated (first at line %d)", k.Value, first)
			}
			seen[k.Value] = k.Line
			val, err := fromYAML(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, &node{kind: kindString, str: k.Value, line: k.Line, col: k.Column, quoted: k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0})
			n.vals = append(n.vals, val)
		}
	case yaml.SequenceNode:
		if y.Tag != "" && y.ShortTag() != "!!seq" {
			return nil, yamlErr(y, "the tag %s is not accepted", y.Tag)
		}
		n.kind = kindArray
		for _, c := range y.Content {
			it, err := fromYAML(c, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, it)
		}
	case yaml.ScalarNode:
		n.quoted = y.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
		switch y.ShortTag() {
		case "!!str":
			n.kind, n.str = kindString, y.Value
		case "!!null":
			n.kind = kindNull
		case "!!bool":
			n.kind = kindBool
			if err := y.Decode(&n.b); err != nil {
				return nil, yamlErr(y, "%v", err)
			}
		case "!!int":
			n.kind = kindNumber
			var i int64
			if err := y.Decode(&i); err != nil {
				return nil, yamlErr(y, "the number %q is out of range", y.Value)
			}
			n.str = strconv.FormatInt(i, 10)
		case "!!float":
			n.kind = kindNumber
			var f float64
			if err := y.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, yamlErr(y, "the number %q is not a finite number", y.Value)
			}
			n.str = strconv.FormatFloat(f, 'g', -1, 64)
		default:
			return nil, yamlErr(y, "the value %q has the tag %s; quote it to make it a string", y.Value, y.ShortTag())
		}
	default:
		return nil, yamlErr(y, "unexpected YAML node")
	}
	return n, nil
}
