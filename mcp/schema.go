package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/schema"
)

// decodeExact decodes JSON keeping numbers as written.
func decodeExact(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

// wellKnown reports whether s names a metaschema the core compiler has
// embedded (http or https, an optional trailing #).
func wellKnown(s string) bool { return schema.Metaschema(s, false) }

func fragment(s string) bool { return strings.HasPrefix(s, "#") }

// outsideRef finds, anywhere in the document (values of default, examples,
// const and enum included, since a compiler or a later tool may read them
// as schemas), a keyword that could make a schema compiler read outside the
// document: a $ref, $dynamicRef or $recursiveRef that is not a fragment, an
// $id that is neither a fragment nor a metaschema, a $schema that is not a
// metaschema, or under draft-04 an id with a scheme or a network path. It
// returns a description of the first it finds.
func outsideRef(doc any) (string, bool) {
	draft4 := false
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok && wellKnown(s) && strings.Contains(s, "draft-04") {
			draft4 = true
		}
	}
	return walkRefs(doc, "", draft4)
}

func walkRefs(v any, at string, draft4 bool) (string, bool) {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if r, ok := walkRefs(e, fmt.Sprintf("%s/%d", at, i), draft4); ok {
				return r, true
			}
		}
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		for _, k := range keys {
			where := at + "/" + k
			if s, ok := v[k].(string); ok {
				refused := false
				switch k {
				case "$ref", "$dynamicRef", "$recursiveRef":
					refused = !fragment(s)
				case "$id":
					refused = !fragment(s) && !wellKnown(s)
				case "$schema":
					refused = !wellKnown(s)
				case "id":
					refused = draft4 && (strings.Contains(s, ":") || strings.HasPrefix(s, "//"))
				}
				if refused {
					return fmt.Sprintf("%s is %q", where, s), true
				}
			}
			if r, ok := walkRefs(v[k], where, draft4); ok {
				return r, true
			}
		}
	}
	return "", false
}

// isObjectSchema reports whether the top level says "type":"object".
func isObjectSchema(doc any) bool {
	m, ok := doc.(map[string]any)
	return ok && m["type"] == "object"
}

// combinators are the keywords under which a hidden name could still be
// required, constrained or reintroduced.
var combinators = []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
	"dependentRequired", "dependentSchemas", "dependencies", "$defs", "definitions"}

// restrict removes the hidden names (denied or fixed) from the schema's
// top-level properties and required, and refuses a schema where that would
// not be sound: a name that is not a top-level property, patternProperties
// present, or a name mentioned under a combinator, where removing it from
// properties would leave it required or constrained elsewhere.
func restrict(doc any, canonical json.RawMessage, hidden []string) (json.RawMessage, error) {
	if len(hidden) == 0 {
		return canonical, nil
	}
	m := doc.(map[string]any)
	{
		props, _ := m["properties"].(map[string]any)
		for _, h := range hidden {
			if _, ok := props[h]; !ok {
				return nil, fmt.Errorf("parameter %q is not a top-level property of the schema", h)
			}
		}
		if _, ok := m["patternProperties"]; ok {
			return nil, fmt.Errorf("the schema has patternProperties, so a hidden parameter cannot be removed soundly")
		}
		for _, k := range combinators {
			sub, ok := m[k]
			if !ok {
				continue
			}
			for _, h := range hidden {
				if mentions(sub, h) {
					return nil, fmt.Errorf("parameter %q is mentioned under %s, so it cannot be removed soundly", h, k)
				}
			}
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		np := make(map[string]any, len(props))
		for k, v := range props {
			np[k] = v
		}
		for _, h := range hidden {
			delete(np, h)
		}
		out["properties"] = np
		if req, ok := m["required"].([]any); ok {
			var keep []any
			for _, r := range req {
				if s, ok := r.(string); ok && contains(hidden, s) {
					continue
				}
				keep = append(keep, r)
			}
			if len(keep) == 0 {
				delete(out, "required")
			} else {
				out["required"] = keep
			}
		}
		m = out
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return agentrt.CanonicalJSON(b)
}

// mentions reports whether name appears as any object key or string value
// in v.
func mentions(v any, name string) bool {
	switch v := v.(type) {
	case string:
		return v == name
	case []any:
		for _, e := range v {
			if mentions(e, name) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if k == name || mentions(e, name) {
				return true
			}
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
