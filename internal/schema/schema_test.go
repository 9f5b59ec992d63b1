package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentrt/agentrt/internal/canon"
)

const numberSchema = `{"type":"object","properties":{"n":{"type":"number","minimum":0,"multipleOf":0.5}}}`

func mustCompile(t *testing.T, tool, schema string) *Schema {
	t.Helper()
	s, err := Compile(tool, []byte(schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	return s
}

// argsReason returns the reason of an *ArgsError, failing the test on any
// other result.
func argsReason(t *testing.T, err error) string {
	t.Helper()
	var ae *ArgsError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v (%T), want an *ArgsError", err, err)
	}
	if !errors.Is(err, ErrArgs) {
		t.Errorf("%v does not match ErrArgs", err)
	}
	if ae.Error() != ae.Reason {
		t.Errorf("Error() = %q, want the reason %q", ae.Error(), ae.Reason)
	}
	if len(ae.Reason) > MaxReasonLen || strings.ContainsAny(ae.Reason, "\n\r") {
		t.Errorf("reason is not one bounded line: %q", ae.Reason)
	}
	return ae.Reason
}

// Numbers whose exponent would send the validator's big rationals out of
// bounds (or into a nil-pointer panic) are refused by the boundary check
// before the validator sees them; ordinary numbers still validate.
func TestCheckArgs_RefusesNumbersPastTheBound(t *testing.T) {
	s := mustCompile(t, "half", numberSchema)
	for _, args := range []string{
		`{"n":1e-10000000}`,
		`{"n":0.1e-9223372036854775808}`,
		`{"n":1e+9999999999999999999}`,
		`{"n":1e10001}`,
		`{"n":` + "1" + strings.Repeat("0", 10000) + `}`,
	} {
		err := s.Validate([]byte(args))
		if err == nil {
			t.Errorf("Validate(%.40s) accepted", args)
			continue
		}
		reason := argsReason(t, err)
		if !strings.HasPrefix(reason, "arguments refused: number ") {
			t.Errorf("Validate(%.40s) = %q, want a number refusal", args, reason)
		}
		if !errors.Is(err, canon.ErrInvalid) {
			t.Errorf("Validate(%.40s) = %v, does not match canon.ErrInvalid", args, err)
		}
	}
	for _, args := range []string{`{"n":1.5}`, `{"n":0}`, `{"n":1e10000}`, `{"n":1e00000000000000000000000001}`} {
		if err := s.Validate([]byte(args)); err != nil {
			t.Errorf("Validate(%s) = %v, want accepted", args, err)
		}
	}
	if err := s.Validate([]byte(`{"n":1.25}`)); err == nil {
		t.Error(`Validate({"n":1.25}) accepted a number that is not a multiple of 0.5`)
	}
	if err := s.Validate([]byte(`{"n":1e-10000}`)); err == nil {
		t.Error(`Validate({"n":1e-10000}) accepted a number that is not a multiple of 0.5`)
	}
}

// A panic inside the validator refuses the arguments: it neither accepts
// them nor escapes to the caller.
func TestValidate_APanicInTheLibraryIsARefusal(t *testing.T) {
	s := mustCompile(t, "half", numberSchema)

	// v6.0.2 really panics on a number big.Rat cannot parse; only the
	// boundary check keeps such numbers away, so call past it.
	err := s.validate(map[string]any{"n": json.Number("0.1e-9223372036854775808")})
	if err == nil || !strings.Contains(err.Error(), "the schema validator failed") {
		t.Errorf("validate past the boundary check = %v, want a recovered panic", err)
	}

	var calls int
	validateHook = func(*jsonschema.Schema, any) error { calls++; panic("boom\nsecond line") }
	t.Cleanup(func() { validateHook = nil })
	err = s.Validate([]byte(`{"n":1.5}`))
	if err == nil {
		t.Fatal("a panicking validator accepted the arguments")
	}
	if calls != 1 {
		t.Fatalf("the hook ran %d times, want 1", calls)
	}
	if got, want := argsReason(t, err), "arguments refused: the schema validator failed: boom second line"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}

	// The hook is what ran: a hook that accepts makes invalid args pass.
	validateHook = func(*jsonschema.Schema, any) error { return nil }
	if err := s.Validate([]byte(`{"n":-1}`)); err != nil {
		t.Errorf("with an accepting hook, Validate = %v", err)
	}
	validateHook = nil
	if err := s.Validate([]byte(`{"n":-1}`)); err == nil {
		t.Error("without the hook, Validate accepted n = -1")
	}
}

// A schema compiles only from itself and the embedded standard metaschemas;
// anything naming another document is refused with that document's URL.
func TestCompile_SchemaReferencesOutsideItselfAreRefused(t *testing.T) {
	cases := []struct{ name, schema, url string }{
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "file:///etc/passwd"},
		{"https ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "https://example.com/s.json"},
		{"http ref with fragment", `{"$defs":{"x":{"$ref":"http://example.com/s.json#/a"}}}`, "http://example.com/s.json#/a"},
		{"relative ref", `{"$ref":"other.json"}`, "other.json"},
		{"relative ref with fragment", `{"items":{"$ref":"other.json#/$defs/x"}}`, "other.json#/$defs/x"},
		{"absolute path ref", `{"allOf":[{"$ref":"/etc/passwd"}]}`, "/etc/passwd"},
		{"id with URL", `{"$id":"https://example.com/s.json","type":"object"}`, "https://example.com/s.json"},
		{"nested id with file", `{"properties":{"a":{"$id":"file:///tmp/x.json"}}}`, "file:///tmp/x.json"},
		{"relative id", `{"$defs":{"a":{"$id":"a.json"}}}`, "a.json"},
		{"non-standard schema", `{"$schema":"https://example.com/meta.json"}`, "https://example.com/meta.json"},
		{"standard schema with fragment path", `{"$schema":"https://json-schema.org/draft/2020-12/schema#/x"}`, "https://json-schema.org/draft/2020-12/schema#/x"},
		{"dynamic ref", `{"$dynamicRef":"https://example.com/s.json#meta"}`, "https://example.com/s.json#meta"},
		{"draft-04 id", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/s.json"}`, "http://example.com/s.json"},
		{"ref in unknown keyword", `{"x-extra":{"$ref":"https://example.com/s.json"}}`, "https://example.com/s.json"},
		{"ref under a property named const", `{"properties":{"const":{"$ref":"https://example.com/c.json"}}}`, "https://example.com/c.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Compile("fetch", []byte(c.schema))
			if err == nil {
				t.Fatalf("Compile accepted %s", c.schema)
			}
			if s != nil {
				t.Error("Compile returned a schema with its error")
			}
			var se *Error
			if !errors.As(err, &se) || se.Tool != "fetch" || !errors.Is(err, ErrSchema) {
				t.Fatalf("Compile = %#v, want a *schema.Error for tool fetch", err)
			}
			want := `tool "fetch": input schema refers to "` + c.url + `" outside itself`
			if err.Error() != want {
				t.Errorf("Error() = %q\nwant      %q", err.Error(), want)
			}
		})
	}

	// Local references, standard metaschemas and data that merely looks
	// like a reference all compile and work.
	s := mustCompile(t, "local", `{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"properties": {
			"a": {"$ref": "#/$defs/name"},
			"b": {"$ref": "#anchored"},
			"c": {"const": {"$ref": "https://example.com/data.json"}},
			"d": {"enum": [{"$id": "file:///etc/passwd"}], "default": {"$schema": "x"}},
			"id": {"type": "string", "examples": [{"$ref": "other.json"}]}
		},
		"$defs": {
			"name": {"type": "string", "minLength": 2},
			"anchor": {"$anchor": "anchored", "type": "integer"}
		}
	}`)
	for args, ok := range map[string]bool{
		`{"a":"ok"}`: true, `{"a":"x"}`: false, `{"a":5}`: false,
		`{"b":3}`: true, `{"b":"3"}`: false,
		`{"c":{"$ref":"https://example.com/data.json"}}`: true, `{"c":{}}`: false,
	} {
		if err := s.Validate([]byte(args)); (err == nil) != ok {
			t.Errorf("Validate(%s) = %v, want ok=%v", args, err, ok)
		}
	}
	meta := mustCompile(t, "meta", `{"$ref":"http://json-schema.org/draft-07/schema#"}`)
	if err := meta.Validate([]byte(`{"type":"string"}`)); err != nil {
		t.Errorf("a valid schema against the draft-07 metaschema: %v", err)
	}
	if err := meta.Validate([]byte(`{"type":7}`)); err == nil {
		t.Error("an invalid schema passed the draft-07 metaschema")
	}
	recursive := mustCompile(t, "tree", `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"additionalProperties":false}},"$ref":"#/$defs/node"}`)
	if err := recursive.Validate([]byte(`{"kids":[{"kids":[]},{"kids":[{}]}]}`)); err != nil {
		t.Errorf("recursive local ref: %v", err)
	}
	if err := recursive.Validate([]byte(`{"kids":[{"kids":[{"x":1}]}]}`)); err == nil {
		t.Error("recursive local ref accepted an extra property deep down")
	}
}

// The standard $schema values of every supported draft compile from the
// embedded metaschemas, with or without the empty fragment.
func TestCompile_StandardDraftsAreEmbedded(t *testing.T) {
	for _, u := range []string{
		"https://json-schema.org/draft/2020-12/schema",
		"https://json-schema.org/draft/2019-09/schema",
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-07/schema",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-04/schema#",
	} {
		s, err := Compile("d", []byte(`{"$schema":"`+u+`","type":"object","required":["a"]}`))
		if err != nil {
			t.Errorf("$schema %s: %v", u, err)
			continue
		}
		if err := s.Validate([]byte(`{}`)); err == nil {
			t.Errorf("$schema %s: missing required property accepted", u)
		}
		if err := s.Validate([]byte(`{"a":1}`)); err != nil {
			t.Errorf("$schema %s: %v", u, err)
		}
	}
}

// Schemas that are not JSON objects or booleans, or fail the boundary
// checks, or are not valid JSON Schemas, are refused with one sentence.
func TestCompile_RefusesWhatIsNotASchema(t *testing.T) {
	cases := []struct{ schema, want string }{
		{``, `tool "t": input schema refused: not valid JSON`},
		{`{"type":`, `tool "t": input schema refused: not valid JSON`},
		{`[]`, `tool "t": input schema is not a JSON object`},
		{`"object"`, `tool "t": input schema is not a JSON object`},
		{`null`, `tool "t": input schema is not a JSON object`},
		{`3`, `tool "t": input schema is not a JSON object`},
		{strings.Repeat(`{"not":`, 257) + `{}` + strings.Repeat(`}`, 257), `tool "t": input schema refused: nested deeper than 256 levels`},
		{`{"type":"number","minimum":1e-10000000}`, `tool "t": input schema refused: number exponent beyond 10000 in magnitude`},
		{`{"description":"\ud800"}`, `tool "t": input schema refused: unpaired surrogate`},
		{"{\"description\":\"\xff\"}", `tool "t": input schema refused: invalid UTF-8`},
		{`{"type":"strin"}`, `tool "t": input schema is not a valid JSON Schema: at /type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at /type: got string, want array`},
		{`{"properties":{"a":{"$ref":"#/$defs/missing"}}}`, `tool "t": input schema does not compile: json-pointer in "agentrt://tools/t.json#/$defs/missing" not found`},
	}
	for _, c := range cases {
		_, err := Compile("t", []byte(c.schema))
		if err == nil {
			t.Errorf("Compile(%.40s) accepted", c.schema)
			continue
		}
		if !errors.Is(err, ErrSchema) {
			t.Errorf("Compile(%.40s) = %v, not an ErrSchema", c.schema, err)
		}
		if err.Error() != c.want {
			t.Errorf("Compile(%.40s)\n got  %q\n want %q", c.schema, err.Error(), c.want)
		}
	}
	_, err := Compile("t", []byte(`{"description":"\ud800"}`))
	if !errors.Is(err, canon.ErrInvalid) {
		t.Errorf("a schema refused as JSON does not match canon.ErrInvalid: %v", err)
	}
}

// A repeated key in a schema keeps its last value, as the stored spec does,
// instead of refusing registration.
func TestCompile_ARepeatedKeyKeepsTheLastValue(t *testing.T) {
	s := mustCompile(t, "t", `{"type":"object","properties":{"a":{"type":"string"}},"properties":{"a":{"type":"integer"}}}`)
	if err := s.Validate([]byte(`{"a":1}`)); err != nil {
		t.Errorf("the last properties did not win: %v", err)
	}
	if err := s.Validate([]byte(`{"a":"x"}`)); err == nil {
		t.Error("the first properties still applies")
	}
}

// The tool name is escaped into the synthetic URL, so no name can point the
// compiler anywhere else.
func TestCompile_ToolNamesAreEscapedIntoTheSyntheticURL(t *testing.T) {
	for name, want := range map[string]string{
		"fetch":         "agentrt://tools/fetch.json",
		"a b/c":         "agentrt://tools/a%20b%2Fc.json",
		"../../etc#x?y": "agentrt://tools/..%2F..%2Fetc%23x%3Fy.json",
		"":              "agentrt://tools/.json",
		"héllo":         "agentrt://tools/h%C3%A9llo.json",
	} {
		if got := URL(name); got != want {
			t.Errorf("URL(%q) = %q, want %q", name, got, want)
		}
		s, err := Compile(name, []byte(`{"$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`))
		if err != nil {
			t.Errorf("Compile with tool name %q: %v", name, err)
			continue
		}
		if err := s.Validate([]byte(`{"a":1}`)); err == nil {
			t.Errorf("tool name %q: local ref not applied", name)
		}
	}
}

// Empty arguments mean {}; everything else must pass the boundary checks
// with canon's reasons.
func TestValidate_ChecksTheArgumentsAtTheBoundary(t *testing.T) {
	open := mustCompile(t, "t", `{"type":"object"}`)
	if err := open.Validate(nil); err != nil {
		t.Errorf("Validate(nil) = %v, want {} accepted", err)
	}
	required := mustCompile(t, "t", `{"type":"object","required":["q"]}`)
	if got, want := argsReason(t, required.Validate(nil)), "arguments do not match the schema: at the top level: missing property 'q'"; got != want {
		t.Errorf("Validate(nil) = %q, want %q", got, want)
	}
	for args, want := range map[string]string{
		` `:                      "arguments refused: not valid JSON",
		`{"q":1`:                 "arguments refused: not valid JSON",
		`{"q":1} {}`:             "arguments refused: not valid JSON",
		`{"q":1,"q":2}`:          "arguments refused: duplicate key",
		`{"q":1,"\u0071":2}`:     "arguments refused: duplicate key",
		`{"q":"\udc00"}`:         "arguments refused: unpaired surrogate",
		"{\"q\":\"\xc3\"}":       "arguments refused: invalid UTF-8",
		strings.Repeat("[", 257): "arguments refused: nested deeper than 256 levels",
		`{"q":1e-10001}`:         "arguments refused: number exponent beyond 10000 in magnitude",
	} {
		err := open.Validate([]byte(args))
		if got := argsReason(t, err); got != want {
			t.Errorf("Validate(%.40q) = %q, want %q", args, got, want)
		}
		if !errors.Is(err, canon.ErrInvalid) {
			t.Errorf("Validate(%.40q) does not match canon.ErrInvalid", args)
		}
	}
}

// Mismatches are described in one short line that names where they are.
func TestValidate_DescribesMismatchesInOneBoundedLine(t *testing.T) {
	s := mustCompile(t, "t", `{
		"type": "object",
		"properties": {
			"path": {"type": "string", "pattern": "^/"},
			"mode": {"type": "integer", "minimum": 0, "maximum": 511},
			"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
			"a/b~c": {"type": "boolean"}
		},
		"required": ["path"],
		"additionalProperties": false
	}`)
	for args, want := range map[string]string{
		`{"path":"/tmp","mode":420,"tags":["x"],"a/b~c":true}`: "",
		`{"path":"tmp"}`:                "arguments do not match the schema: at /path: 'tmp' does not match pattern '^/'",
		`{"path":"/x","mode":512}`:      "arguments do not match the schema: at /mode: maximum: got 512, want 511",
		`{"path":"/x","mode":1.5}`:      "arguments do not match the schema: at /mode: got number, want integer",
		`{"path":"/x","tags":["a",2]}`:  "arguments do not match the schema: at /tags/1: got number, want string",
		`{"path":"/x","a/b~c":"yes"}`:   "arguments do not match the schema: at /a~1b~0c: got string, want boolean",
		`{"path":"/x","extra\nline":1}`: "arguments do not match the schema: at the top level: additional properties 'extra\\nline' not allowed",
		`{"mode":-1}`:                   "arguments do not match the schema: at the top level: missing property 'path'; at /mode: minimum: got -1, want 0",
	} {
		err := s.Validate([]byte(args))
		if want == "" {
			if err != nil {
				t.Errorf("Validate(%s) = %v, want accepted", args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Validate(%s) accepted, want %q", args, want)
			continue
		}
		if got := argsReason(t, err); got != want {
			t.Errorf("Validate(%s)\n got  %q\n want %q", args, got, want)
		}
	}

	// Many failures, or a huge value quoted in a message, stay within the
	// bound and on one line.
	many := mustCompile(t, "t", `{"type":"array","items":{"type":"string"}}`)
	err := many.Validate([]byte("[" + strings.Repeat("1,", 500) + "1]"))
	if got := argsReason(t, err); len(got) < MaxReasonLen-10 || !strings.HasSuffix(got, "...") {
		t.Errorf("reason for 501 failures = %d bytes %q..., want cut at the bound", len(got), got[:min(len(got), 80)])
	}
	long := mustCompile(t, "t", `{"type":"object","properties":{"s":{"enum":["x"]}}}`)
	err = long.Validate([]byte(`{"s":"` + strings.Repeat("é\u2028\n", 1000) + `"}`))
	if got := argsReason(t, err); strings.ContainsRune(got, '\u2028') {
		t.Errorf("reason contains a line separator: %q", got)
	}
}

// Compiled schemas validate concurrently without interference.
func TestValidate_ConcurrentUse(t *testing.T) {
	s := mustCompile(t, "half", numberSchema)
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				if err := s.Validate([]byte(`{"n":2.5}`)); err != nil {
					done <- err
					return
				}
				if err := s.Validate([]byte(`{"n":-2}`)); err == nil {
					done <- errors.New("n = -2 accepted")
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	s, err := Compile("write_file", []byte(`{
		"type": "object",
		"properties": {
			"path": {"type": "string", "pattern": "^/", "maxLength": 4096},
			"content": {"type": "string"},
			"mode": {"type": "integer", "minimum": 0, "maximum": 511},
			"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8}
		},
		"required": ["path", "content"],
		"additionalProperties": false
	}`))
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"path":"/tmp/out/report.html","content":"<html><body><h1>Report</h1></body></html>\n","mode":420,"tags":["finance","q3"]}`)
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
