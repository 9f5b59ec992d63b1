package agentrt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// A Disclosure may only take away. narrows holds every implementation to
// that: what it returns must be the tool's outcome with fields removed and
// values redacted, never a field, an element or a character the tool did
// not produce.

// markerRE matches a redaction marker.
var markerRE = regexp.MustCompile(`\[REDACTED:[A-Za-z0-9_.:-]{1,64}\]`)

// narrows says why out is not a narrowing of in, or "" when it is.
func narrows(in DisclosureInput, out DisclosureOutcome) string {
	for _, f := range out.Findings {
		if f.Rule == "" || !f.Action.Valid() {
			return fmt.Sprintf("a finding at %q has no rule or an unknown action %q", f.Pointer, f.Action)
		}
	}
	if !redactionOf(in.Summary, out.Summary) {
		return "the summary holds text the tool did not return"
	}
	if !redactionOf(in.FailureMessage, out.FailureMessage) {
		return "the failure message holds text the tool did not return"
	}
	if len(out.Blocks) != len(in.Blocks) {
		return fmt.Sprintf("the result had %d blocks and the disclosure returned %d", len(in.Blocks), len(out.Blocks))
	}
	for i, b := range out.Blocks {
		t := in.Blocks[i]
		t.Text = b.Text
		if !redactionOf(in.Blocks[i].Text, b.Text) || !sameBlock(t, b) {
			return fmt.Sprintf("block %d holds what the tool did not return", i)
		}
	}
	if bytes.Equal(in.Content, out.Content) {
		return ""
	}
	if !json.Valid(in.Content) {
		if !redactionOf(string(in.Content), string(out.Content)) {
			return "the content holds bytes the tool did not return"
		}
		return ""
	}
	a, err := decodeOrdered(in.Content)
	if err != nil {
		return "the tool's content would not decode"
	}
	b, err := decodeOrdered(out.Content)
	if err != nil {
		return "the disclosed content is not JSON"
	}
	return subtree("", a, b)
}

// sameBlock compares two blocks but for their text.
func sameBlock(a, b ResultBlock) bool {
	return a.Type == b.Type && a.MIMEType == b.MIMEType && bytes.Equal(a.Data, b.Data) && a.URI == b.URI &&
		a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.Truncated == b.Truncated && a.Text == b.Text
}

// redactionOf reports whether out is in with some spans replaced by
// markers or removed: the text between markers appears in in, in order.
func redactionOf(in, out string) bool {
	if in == out {
		return true
	}
	pos := 0
	last := 0
	for _, m := range markerRE.FindAllStringIndex(out, -1) {
		piece := out[last:m[0]]
		i := strings.Index(in[pos:], piece)
		if i < 0 {
			return false
		}
		pos += i + len(piece)
		last = m[1]
	}
	return strings.Contains(in[pos:], out[last:])
}

// subtree reports where b is not a narrowing of a: objects may lose
// members, arrays keep their length, and a leaf may be redacted (a string
// by redactionOf, any leaf by a marker in its place).
func subtree(at string, a, b any) string {
	if s, ok := b.(string); ok && markerRE.MatchString(s) && markerRE.FindString(s) == s {
		return ""
	}
	switch av := a.(type) {
	case ordered:
		bv, ok := b.(ordered)
		if !ok {
			return at + " changed its type"
		}
		seen := make(map[string]bool, len(bv))
		for _, m := range bv {
			if seen[m.key] {
				return at + "/" + m.key + " appears twice"
			}
			seen[m.key] = true
			v, ok := av.get(m.key)
			if !ok {
				return at + "/" + m.key + " was not in the tool's result"
			}
			if why := subtree(at+"/"+m.key, v, m.val); why != "" {
				return why
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(bv) != len(av) {
			return at + " is not the tool's array"
		}
		for i := range av {
			if why := subtree(fmt.Sprintf("%s/%d", at, i), av[i], bv[i]); why != "" {
				return why
			}
		}
		return ""
	case string:
		bs, ok := b.(string)
		if !ok || !redactionOf(av, bs) {
			return at + " holds text the tool did not return"
		}
		return ""
	default:
		if a != b {
			return at + " changed its value"
		}
		return ""
	}
}

// ordered is a JSON object with its members in order.
type ordered []member

type member struct {
	key string
	val any
}

func (o ordered) get(k string) (any, bool) {
	for _, m := range o {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

// decodeOrdered decodes JSON keeping object order and numbers as written.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := ordered{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{k.(string), v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}
