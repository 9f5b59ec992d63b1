package cel

import (
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// Tool patterns know * (any run, none included) and ? (one character), and
// match the whole name.
func TestGlob_MatchesWholeNamesWithStarAndQuestion(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true}, {"*", "anything", true}, {"fs.read", "fs.read", true}, {"fs.read", "fs.read2", false},
		{"fs.*", "fs.read", true}, {"fs.*", "fs.", true}, {"fs.*", "xfs.read", false}, {"*.read", "fs.read", true},
		{"f?.read", "fs.read", true}, {"f?.read", "f.read", false}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false},
		{"??", "é!", true}, {"?", "é", true}, {"a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaa", false}, {"", "", true}, {"", "a", false},
	}
	for _, c := range cases {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// The spec-hash cache compares every field of ToolSpec before reusing a
// hash; a new field must be added to sameSpec, and this count with it.
func TestSpecHash_CacheComparesEveryField(t *testing.T) {
	if n := reflect.TypeOf(agentrt.ToolSpec{}).NumField(); n != 6 {
		t.Fatalf("ToolSpec has %d fields; sameSpec compares 6: update it", n)
	}
	p := &Policy{}
	spec := agentrt.ToolSpec{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`), SideEffect: agentrt.ReadOnly}
	a, err := p.specHash(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Description = "changed"
	b, _ := p.specHash(spec)
	if a == b {
		t.Fatal("a changed spec reused the cached hash")
	}
}

// The arguments reader agrees with encoding/json on every input: the same
// values (integers that fit as int64, other numbers as float64) or an
// error on both sides.
func FuzzArgs_ParseAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":[1,2.5,"x",true,false,null,{}]}`, `{"a":"\u00e9\n"}`, `{"a":1e400}`,
		`{"a":-0}`, `{"a":1}{}`, `{"a":01}`, `{"a":"` + "\xff" + `"}`, `{"a":1,"a":2}`, `[]`, ` {"a" : [ ] } `, `{"a":"\ud800"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, gerr := parseArgs([]byte(raw))
		var want any
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		werr := dec.Decode(&want)
		if werr == nil && dec.More() {
			werr = errArgsSyntax
		}
		if werr == nil {
			if _, err := dec.Token(); err != io.EOF {
				werr = errArgsSyntax
			}
		}
		if werr == nil {
			want, werr = convertNumbers(want)
		}
		if werr == nil && agentrt.CheckJSON([]byte(raw)) != nil {
			// Repeated keys and invalid UTF-8, which encoding/json lets
			// through, are refused by the runtime before any policy; the
			// reader may refuse them too.
			return
		}
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: parseArgs error %v, encoding/json error %v", raw, gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parseArgs %#v, encoding/json %#v", raw, got, want)
		}
	})
}

func convertNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return number(x)
	case map[string]any:
		for k, e := range x {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
	}
	return v, nil
}
