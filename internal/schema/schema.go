package schema

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentrt/agentrt/internal/canon"
)

// ErrSchema matches every [*Error] with [errors.Is].
var ErrSchema = errors.New("input schema refused")

// ErrArgs matches every [*ArgsError] with [errors.Is].
var ErrArgs = errors.New("arguments refused")

// Error reports a tool input schema that cannot be compiled. Reason is one
// sentence without the tool name.
type Error struct {
	Tool   string
	Reason string

	err error // the cause, when there is one worth matching on
}

func (e *Error) Error() string { return fmt.Sprintf("tool %q: %s", e.Tool, e.Reason) }

// Is reports whether target is [ErrSchema].
func (e *Error) Is(target error) bool { return target == ErrSchema }

// Unwrap returns the [*canon.Error] for a schema refused as JSON, else nil.
func (e *Error) Unwrap() error { return e.err }

// Schema is a compiled tool input schema. It is safe for concurrent use.
type Schema struct {
	sch *jsonschema.Schema
}

// URL returns the synthetic URL a tool's schema is compiled under. Nothing is
// ever fetched from it; it only anchors references inside the schema.
func URL(tool string) string {
	return "agentrt://tools/" + url.PathEscape(tool) + ".json"
}

// Compile compiles the input schema of the named tool. The schema must be a
// JSON object or boolean that passes the boundary checks of package canon,
// except that a repeated key keeps its last value; it may use the standard
// $schema values of drafts 4, 6, 7, 2019-09 and 2020-12, local references
// such as "#/$defs/x", and references to the standard metaschemas. Any
// other $ref, $id or $schema is refused, naming what it refers to.
func Compile(tool string, schema []byte) (*Schema, error) {
	refuse := func(reason string, err error) (*Schema, error) {
		return nil, &Error{Tool: tool, Reason: reason, err: err}
	}
	// The policy form collapses a repeated key to its last value, as the
	// stored spec does, so a schema compiles the same from either.
	policy, err := canon.PolicyUnchecked(schema)
	if err != nil {
		return refuse("input schema refused: "+canonReason(err), err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policy))
	if err != nil {
		return refuse("input schema refused: "+canon.ReasonSyntax, nil)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return refuse("input schema is not a JSON object", nil)
	}
	if ext, ok := outside(doc); ok {
		return refuse(fmt.Sprintf("input schema refers to %q outside itself", clip(ext, 200)), nil)
	}

	loc := URL(tool)
	c := jsonschema.NewCompiler()
	// A loader with no schemes refuses every document the library would
	// fetch; the embedded metaschemas never reach it.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(loc, doc); err != nil {
		return refuse("input schema does not compile: "+oneLine(err.Error(), MaxReasonLen), err)
	}
	sch, err := SafeCompile(c, loc)
	if err != nil {
		var le *jsonschema.LoadURLError
		if errors.As(err, &le) {
			return refuse(fmt.Sprintf("input schema refers to %q outside itself", clip(le.URL, 200)), nil)
		}
		var ve *jsonschema.SchemaValidationError
		if errors.As(err, &ve) {
			var inner *jsonschema.ValidationError
			if errors.As(ve.Err, &inner) {
				return refuse("input schema is not a valid JSON Schema: "+describe(inner, MaxReasonLen), nil)
			}
		}
		return refuse("input schema does not compile: "+oneLine(err.Error(), MaxReasonLen), nil)
	}
	return &Schema{sch: sch}, nil
}

// canonReason returns the reason of a refusal from package canon.
func canonReason(err error) string {
	var ce *canon.Error
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return canon.ReasonSyntax
}

// SafeCompile runs the library's compiler, turning a panic into an error:
// a schema that crashes the compiler is refused like any other bad schema.
// The mcp module compiles pinned output schemas through it too.
func SafeCompile(c *jsonschema.Compiler, loc string) (sch *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, fmt.Errorf("the schema compiler failed: %v", r)
		}
	}()
	return c.Compile(loc)
}

// metaschemas are the standard metaschemas embedded in the library, by the
// URL they are named with, without scheme or fragment.
var metaschemas = []string{
	"json-schema.org/schema",
	"json-schema.org/draft/2020-12/schema",
	"json-schema.org/draft/2019-09/schema",
	"json-schema.org/draft-07/schema",
	"json-schema.org/draft-06/schema",
	"json-schema.org/draft-04/schema",
}

// Metaschema reports whether ref names a standard metaschema (http or
// https, an empty trailing "#" allowed), followed by a fragment only when
// fragments are allowed.
func Metaschema(ref string, fragments bool) bool {
	u, frag, _ := strings.Cut(ref, "#")
	if frag != "" && !fragments {
		return false
	}
	u, ok := strings.CutPrefix(u, "https://")
	if !ok {
		u, ok = strings.CutPrefix(u, "http://")
	}
	return ok && slices.Contains(metaschemas, u)
}

// local reports whether ref stays inside the document: a fragment, or empty.
func local(ref string) bool { return ref == "" || ref[0] == '#' }

// outside walks the schema and returns the first reference, identifier or
// metaschema that names something other than the schema itself or a
// standard metaschema. Keys are walked in sorted order so the one named is
// always the same. Values of keywords that hold instance data (const, enum,
// default, examples) are not schemas and are skipped; every other value is
// walked, which may refuse a reference-like string in an unknown keyword,
// but never lets one through.
func outside(doc any) (string, bool) {
	draft4 := false
	if obj, ok := doc.(map[string]any); ok {
		s, _ := obj["$schema"].(string)
		draft4 = Metaschema(s, false) && strings.Contains(s, "draft-04")
	}
	return walkSchema(doc, draft4)
}

func walkSchema(v any, draft4 bool) (string, bool) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if ext, ok := walkSchema(e, draft4); ok {
				return ext, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if ext, ok := walkKeyword(k, v[k], draft4); ok {
				return ext, true
			}
		}
	}
	return "", false
}

func walkKeyword(k string, v any, draft4 bool) (string, bool) {
	switch k {
	case "const", "enum", "default", "examples":
		return "", false
	case "$schema":
		if s, ok := v.(string); ok && !Metaschema(s, false) {
			return s, true
		}
		return "", false
	case "$ref", "$dynamicRef", "$recursiveRef":
		if s, ok := v.(string); ok && !local(s) && !Metaschema(s, true) {
			return s, true
		}
		return "", false
	case "$id":
		if s, ok := v.(string); ok && !local(s) {
			return s, true
		}
		return "", false
	case "id":
		if s, ok := v.(string); ok {
			if draft4 && !local(s) {
				return s, true
			}
			return "", false
		}
	case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
		// Keys here are names chosen by the schema's author, not keywords:
		// each value is a schema (or, for dependencies, a list of names).
		if m, ok := v.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for name := range m {
				keys = append(keys, name)
			}
			slices.Sort(keys)
			for _, name := range keys {
				if ext, ok := walkSchema(m[name], draft4); ok {
					return ext, true
				}
			}
			return "", false
		}
	}
	return walkSchema(v, draft4)
}
