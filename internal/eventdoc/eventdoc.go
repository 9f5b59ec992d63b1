package eventdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
)

// Docs holds the doc comments of the root package's types and fields.
type Docs struct {
	types  map[string]string
	fields map[string]map[string]string
}

// ReadDocs parses the Go files in dir (not tests) for type and field docs.
func ReadDocs(dir string) (*Docs, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	d := &Docs{types: map[string]string{}, fields: map[string]map[string]string{}}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if doc != nil {
					d.types[ts.Name.Name] = oneLine(doc.Text())
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				m := map[string]string{}
				for _, fl := range st.Fields.List {
					text := ""
					if fl.Doc != nil {
						text = fl.Doc.Text()
					} else if fl.Comment != nil {
						text = fl.Comment.Text()
					}
					for _, n := range fl.Names {
						m[n.Name] = oneLine(text)
					}
				}
				d.fields[ts.Name.Name] = m
			}
		}
	}
	return d, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// field is one JSON field of a payload, flattened from embedded structs.
type field struct {
	name     string
	goType   reflect.Type
	doc      string
	content  bool
	digest   bool
	optional bool
}

// fields lists t's JSON fields in encoding order.
func (d *Docs) structFields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, d.structFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, field{name: name, goType: f.Type, doc: d.fields[t.Name()][f.Name],
			content: f.Tag.Get("audit") == "content", digest: f.Tag.Get("audit") == "digest", optional: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")})
	}
	return out
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
	durType  = reflect.TypeOf(time.Duration(0))
)

// Schema is the JSON Schema of one event type's payload.
func (d *Docs) Schema(k agentrt.EventKind) map[string]any {
	t := reflect.TypeOf(k.Payload)
	s := d.object(t, false, 0)
	out := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         string(k.Type) + ".schema.json",
		"title":       string(k.Type) + " (" + t.Name() + ")",
		"description": d.types[t.Name()],
	}
	for key, v := range s {
		out[key] = v
	}
	return out
}

func (d *Docs) object(t reflect.Type, content bool, depth int) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range d.structFields(t) {
		p := d.schemaOf(f.goType, f.content || content, depth+1)
		if f.doc != "" {
			p["description"] = f.doc
		}
		if f.content || content {
			p["x-agentrt-content"] = true
		} else if f.digest {
			p["x-agentrt-content-digest"] = true
		}
		props[f.name] = p
		if !f.optional {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func (d *Docs) schemaOf(t reflect.Type, content bool, depth int) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{"description": "any JSON value"}
	case t == durType:
		return map[string]any{"type": "integer", "description": "nanoseconds"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := d.schemaOf(t.Elem(), content, depth)
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": d.schemaOf(t.Elem(), content, depth)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": d.schemaOf(t.Elem(), content, depth)}
	case reflect.Struct:
		return d.object(t, content, depth)
	}
	return map[string]any{}
}

// SchemaJSON is the schema as the file holds it: indented, keys sorted.
func (d *Docs) SchemaJSON(k agentrt.EventKind) []byte {
	b, _ := json.MarshalIndent(d.Schema(k), "", "  ")
	return append(b, '\n')
}

// jsonType names a Go type's JSON form for the reference's tables.
func jsonType(t reflect.Type) string {
	switch {
	case t == timeType:
		return "string (RFC 3339 time)"
	case t == rawType:
		return "JSON"
	case t == durType:
		return "integer (ns)"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.String:
		if t.Name() != "string" && t.PkgPath() != "" {
			return "string (" + t.Name() + ")"
		}
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)"
		}
		return "array of " + jsonType(t.Elem())
	case reflect.Map:
		return "object of " + jsonType(t.Elem())
	case reflect.Struct:
		return "object (" + t.Name() + ")"
	}
	return t.String()
}

// Markdown is docs/events.md.
func (d *Docs) Markdown() []byte {
	var b bytes.Buffer
	b.WriteString(`# Events

<!-- Generated by internal/eventdoc from the payload types in the root
package; do not edit. Regenerate with
go test ./internal/eventdoc -run TestEvents_DocsAndSchemaMatchTheTypes -update -->

Every event the runtime writes to the chain, with its payload. Each event
type has one Go type (` + "`agentrt.DecodePayload`" + ` returns it) and a JSON
Schema in [events/](events/). An event carries ` + "`seq`, `run_id`, `step_id`, `at`, `type`" + ` and
the payload; the chain hashes the payload's SHA-256, not its bytes.

**Content** fields hold what a model chose, a tool or a server produced
or a person wrote: arguments, results, model text, notes, and any text
that may quote them (the tool name a model asked for, a policy's reason,
a provider's error or stop reason, a tool's failure class, a block's MIME
type). Erasure removes them (see [retention.md](retention.md)). A
**content digest** is an unkeyed hash of content (a result's canonical
hash, an approval's hash over the arguments): it would confirm a guess of
the content, so erasure removes it too. **Metadata** is everything else:
ids, times, statuses, the names of registered tools, spec hashes, counts
and costs; each is written by the runtime or its configuration. A field
inside a content field is content.

| Type | Payload | Content fields |
|---|---|---|
`)
	kinds := agentrt.EventCatalogue()
	for _, k := range kinds {
		t := reflect.TypeOf(k.Payload)
		var cs []string
		d.walk(t, "", false, 0, func(path string, f field, content bool) {
			if content && !strings.Contains(path, ".") {
				cs = append(cs, "`"+path+"`")
			}
		})
		c := strings.Join(cs, ", ")
		if c == "" {
			c = "none"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s |\n", k.Type, anchor(string(k.Type)), t.Name(), c)
	}
	for _, k := range kinds {
		t := reflect.TypeOf(k.Payload)
		fmt.Fprintf(&b, "\n## %s\n\n`agentrt.%s`: %s Schema: [%s](events/%s.schema.json).\n\n", k.Type, t.Name(), d.types[t.Name()], k.Type, k.Type)
		rows := 0
		var tb bytes.Buffer
		tb.WriteString("| Field | JSON | Kind | Description |\n|---|---|---|---|\n")
		d.walk(t, "", false, 0, func(path string, f field, content bool) {
			kind := "metadata"
			if content {
				kind = "**content**"
			} else if f.digest {
				kind = "**content digest**"
			}
			opt := ""
			if f.optional {
				opt = " (optional)"
			}
			fmt.Fprintf(&tb, "| `%s`%s | %s | %s | %s |\n", path, opt, jsonType(f.goType), kind, strings.ReplaceAll(f.doc, "|", `\|`))
			rows++
		})
		if rows == 0 {
			b.WriteString("An empty object: `{}`.\n")
		} else {
			b.Write(tb.Bytes())
		}
	}
	return b.Bytes()
}

// walk visits t's fields depth first with their dotted JSON paths.
func (d *Docs) walk(t reflect.Type, prefix string, content bool, depth int, fn func(path string, f field, content bool)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType || depth > 3 {
		return
	}
	for _, f := range d.structFields(t) {
		c := content || f.content
		fn(prefix+f.name, f, c)
		ft := f.goType
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != timeType {
			d.walk(ft, prefix+f.name+".", c, depth+1, fn)
		}
	}
}

func anchor(s string) string {
	return strings.NewReplacer(".", "", "_", "_").Replace(s)
}

// Files returns every generated file by its path under docs/.
func (d *Docs) Files() map[string][]byte {
	out := map[string][]byte{"events.md": d.Markdown()}
	for _, k := range agentrt.EventCatalogue() {
		out[filepath.Join("events", string(k.Type)+".schema.json")] = d.SchemaJSON(k)
	}
	return out
}

// Write writes the files under docsDir, removing schema files for types
// the catalogue no longer holds.
func (d *Docs) Write(docsDir string) error {
	files := d.Files()
	if err := os.MkdirAll(filepath.Join(docsDir, "events"), 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(docsDir, "events", "*.schema.json"))
	for _, p := range old {
		rel, _ := filepath.Rel(docsDir, p)
		if _, ok := files[rel]; !ok {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(docsDir, n), files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}
