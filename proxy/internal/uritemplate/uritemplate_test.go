package uritemplate

import "testing"

// A template matches the URIs it expands to and no others; of two that
// match, the one with more literal text is more specific, then the one
// with fewer expressions that cross '/'; a template with an unclosed or
// empty expression compiles to nil.
func TestTemplate_MatchesItsExpansionsAndOrdersBySpecificity(t *testing.T) {
	for tmpl, cases := range map[string]map[string]bool{
		"file:///notes/{name}":   {"file:///notes/a.txt": true, "file:///notes/a/b.txt": false, "file:///other/a.txt": false},
		"file:///{+path}":        {"file:///notes/a/b.txt": true, "http://x/": false},
		"db://rows{?limit,from}": {"db://rows": true, "db://rows?limit=3": true, "db://rowsx": false},
	} {
		c := Compile(tmpl)
		if c == nil || c.Raw != tmpl {
			t.Fatalf("Compile(%q) = %+v", tmpl, c)
		}
		for uri, want := range cases {
			if got := c.Match(uri); got != want {
				t.Errorf("%s matches %s = %v, want %v", tmpl, uri, got, want)
			}
		}
	}
	narrow, broad, wide := Compile("file:///notes/{name}"), Compile("file:///notes/{+rest}"), Compile("file:///{+path}")
	if MoreSpecific(narrow, wide) != 1 || MoreSpecific(wide, narrow) != -1 || MoreSpecific(narrow, broad) != 1 || MoreSpecific(narrow, narrow) != 0 {
		t.Error("specificity order is wrong")
	}
	for _, bad := range []string{"file:///{name", "file:///{}", "file:///a}b"} {
		if Compile(bad) != nil {
			t.Errorf("Compile(%q) compiled", bad)
		}
	}
}
