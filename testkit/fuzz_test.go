package testkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit"
)

const fuzzSchema = `{
  "type": "object",
  "properties": {
    "path":  {"type": "string", "minLength": 1, "maxLength": 12},
    "mode":  {"enum": ["read", "write"]},
    "count": {"type": "integer", "minimum": 1, "maximum": 9},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "tags":  {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3},
    "opts":  {"$ref": "#/$defs/opts"}
  },
  "required": ["path", "mode"],
  "additionalProperties": false,
  "$defs": {"opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "additionalProperties": false}}
}`

func fuzzSpec() agentrt.ToolSpec {
	return agentrt.ToolSpec{Name: "files", Description: "files", SideEffect: agentrt.LocalMutation, Timeout: time.Second,
		InputSchema: json.RawMessage(fuzzSchema)}
}

// Valid arguments are the same for a seed, differ across seeds, all pass
// the runtime's check, and stay within the bounds asked for.
func TestFuzz_ValidIsDeterministicAndBounded(t *testing.T) {
	f := testkit.Fuzz{Seed: 7, Count: 40, MaxItems: 2, MaxLength: 6}
	a, err := f.Valid(fuzzSpec())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Valid(fuzzSpec())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed generated different arguments")
	}
	f.Seed = 8
	c, _ := f.Valid(fuzzSpec())
	if reflect.DeepEqual(a, c) {
		t.Fatal("two seeds generated the same arguments")
	}
	if len(a) != 40 {
		t.Fatalf("%d arguments, want 40", len(a))
	}
	seenOptional := map[string]bool{}
	for _, args := range a {
		if err := agentrt.CheckArgs(fuzzSpec(), args); err != nil {
			t.Fatalf("generated %s is refused: %v", args, err)
		}
		var v struct {
			Path  string          `json:"path"`
			Tags  []string        `json:"tags"`
			Count json.RawMessage `json:"count"`
			Opts  json.RawMessage `json:"opts"`
		}
		if err := json.Unmarshal(args, &v); err != nil {
			t.Fatal(err)
		}
		if n := utf8.RuneCountInString(v.Path); n > 6 || n < 1 {
			t.Fatalf("path of %d runes in %s", n, args)
		}
		if len(v.Tags) > 2 {
			t.Fatalf("%d tags in %s", len(v.Tags), args)
		}
		if v.Count != nil {
			seenOptional["count"] = true
		}
		if v.Opts != nil {
			seenOptional["opts"] = true
		}
	}
	if !seenOptional["count"] || !seenOptional["opts"] {
		t.Fatalf("optional properties never generated: %v", seenOptional)
	}
}

// Invalid arguments cover every boundary the runtime guards and near
// misses of the schema, and the runtime refuses each one.
func TestFuzz_InvalidCoversTheBoundaryAndNearMisses(t *testing.T) {
	cases, err := testkit.Fuzz{Seed: 1}.Invalid(fuzzSpec())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
		if err := agentrt.CheckArgs(fuzzSpec(), c.Args); err == nil {
			t.Errorf("%s: the runtime accepted %q", c.Name, c.Args)
		}
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{
		"depth", "duplicate key", "invalid UTF-8", "unpaired surrogate", "truncated JSON", "two values", "huge exponent", "long number",
		"missing required path", "missing required mode", "unknown property",
		"path: one past maxLength", "path: one short of minLength", "mode: not in enum",
		"count: below minimum", "count: above maximum", "count: wrong type string",
		"ratio: at exclusive minimum", "tags: one past maxItems", "top level array", "top level null",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no invalid case %q among:\n%s", want, all)
		}
	}
	var utf8Case []byte
	for _, c := range cases {
		if c.Name == "invalid UTF-8" {
			utf8Case = c.Args
		}
	}
	if utf8.Valid(utf8Case) || !bytes.Contains(utf8Case, []byte{0xff}) {
		t.Errorf("the invalid UTF-8 case is %q", utf8Case)
	}
}

// Check calls the tool with every valid argument and reports a panic; an
// error the tool returns is its own business and is not reported.
func TestFuzz_CheckReportsAPanicNotAnError(t *testing.T) {
	calls := 0
	erring := agentrt.ToolFunc{ToolSpec: fuzzSpec(), Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		calls++
		return agentrt.ToolResult{}, errors.New("no such file")
	}}
	rec := &recTB{TB: t}
	testkit.Fuzz{Seed: 3, Count: 10}.Check(rec, erring)
	if len(rec.errs) != 0 || calls != 10 {
		t.Fatalf("an erring tool: %d calls, reports:\n%s", calls, strings.Join(rec.errs, "\n"))
	}

	panicky := agentrt.ToolFunc{ToolSpec: fuzzSpec(), Fn: func(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
		var v struct{ Mode string }
		_ = json.Unmarshal(call.Args, &v)
		if v.Mode == "write" {
			panic("write not implemented")
		}
		return agentrt.ToolResult{}, nil
	}}
	rec = &recTB{TB: t}
	testkit.Fuzz{Seed: 3, Count: 10}.Check(rec, panicky)
	rec.reported(t, `tool "files" panicked`, "write not implemented")
}
