package celpolicy

import (
	"encoding/json"
	"reflect"
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
