package textcut

import (
	"testing"
	"unicode/utf8"
)

// Truncate keeps within the bound, never splits a rune, and marks the cut.
func TestTruncate_CutsOnARuneBoundaryWithinTheBound(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello world", 8, "hello…"},
		{"héllo", 4, "h…"},
		{"日本語", 2, ""},
		{"日本語", 5, "…"},
		{"abc", 2, "ab"},
		{"abc", -1, ""},
		{"a\xffbcdef", 5, "a\xff…"},
		{"hello world", 3, "…"},
		{"hello world", 2, "he"}, // no room for the mark
		{"héllo", 5, "h…"},       // é would straddle the cut
		{"日本語です", 9, "日本…"},
		{"日本語です", 8, "日…"},
		{"日本", 0, ""},
		{"\xff\xff\xff\xff\xff", 4, "\xff…"},
		{"a\xe6\x97\xa5\x80\x80bcd", 8, "a\xe6\x97\xa5\x80…"}, // stray continuation bytes
	} {
		got := Truncate(c.s, c.n)
		if got != c.want || (c.n >= 0 && len(got) > c.n) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if utf8.ValidString(c.s) && !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q split a rune", c.s, c.n, got)
		}
	}
	if got := TruncateWith("abcdefgh", 6, "..."); got != "abc..." {
		t.Errorf("TruncateWith = %q", got)
	}
}
