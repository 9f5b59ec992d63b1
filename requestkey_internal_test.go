package agentrt

import (
	"encoding/json"
	"testing"
)

// Two calls share a key exactly when their canonical requests are equal:
// spellings of one request (key order, whitespace, escapes) share it;
// anything that differs (a number written another way, an added field,
// another tool, the NUL boundary moved) does not; and arguments the
// runtime refuses as JSON have no key.
func TestRequestKey_NoCollisions(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":"x"}`, `{"b":"x","a":1}`, " {\n\"a\" : 1 , \"b\":\"\\u0078\"}"},
		{`{}`, ``, ` { } `},
		{`{"s":"<&>"}`, `{"s":"\u003c\u0026\u003e"}`},
	}
	for _, group := range same {
		k0, err := RequestKey("t", json.RawMessage(group[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range group[1:] {
			k, err := RequestKey("t", json.RawMessage(s))
			if err != nil || k != k0 {
				t.Fatalf("%q and %q differ: %v", group[0], s, err)
			}
		}
	}
	type req struct{ tool, args string }
	distinct := []req{
		{"t", `{"n":7}`}, {"t", `{"n":7.0}`}, {"t", `{"n":7e0}`}, {"t", `{"n":"7"}`},
		{"t", `{"n":7,"opt":null}`}, {"t", `{}`}, {"u", `{}`}, {"t_", `{}`},
		{"a", `{"b":1}`}, {"ab", `{"b":1}`}, {"t", `{"s":"a\u0000b"}`}, {"t", `{"s":"ab"}`},
		{"t", `[]`}, {"t", `null`}, {"t", `{"a":{"b":1}}`}, {"t", `{"a.b":1}`},
	}
	seen := map[string]req{}
	for _, r := range distinct {
		k, err := RequestKey(r.tool, json.RawMessage(r.args))
		if err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		if prev, dup := seen[k]; dup {
			t.Fatalf("%v and %v share key %s", prev, r, k)
		}
		seen[k] = r
	}
	// The NUL between name and arguments: no name can run into the
	// arguments, because names cannot hold NUL and canonical arguments
	// never start with one.
	if requestKeyOf("a", []byte("b{}")) == requestKeyOf("ab", []byte("{}")) {
		t.Fatal("boundary collision")
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":"\ud800"}`, `{"a":1`, "{\"a\":\"\xff\"}", `{"a":1} {}`} {
		if k, err := RequestKey("t", json.RawMessage(bad)); err == nil {
			t.Errorf("%q has key %s", bad, k)
		}
	}
}
