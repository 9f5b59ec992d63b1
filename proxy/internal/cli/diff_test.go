package cli

import (
	"strings"
	"testing"
)

// A small line diff in the unified format: context around each change,
// hunk ranges counted from 1, distant changes in separate hunks, and each
// line escaped so a server's text cannot forge one.
func TestUnifiedDiff_HunksAndEscapes(t *testing.T) {
	if got := unifiedDiff("a", "b", []string{"x", "y"}, []string{"x", "y"}); got != "" {
		t.Fatalf("equal inputs: %q", got)
	}
	a := strings.Split("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", " ")
	b := append([]string(nil), a...)
	b[1] = "two"
	b[13] = "fourteen\x1b[2J"
	got := unifiedDiff("old", "new", a, b)
	want := "--- old\n+++ new\n" +
		"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n" +
		"@@ -11,5 +11,5 @@\n 11\n 12\n 13\n-14\n+fourteen\\u{001B}[2J\n 15\n"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := unifiedDiff("o", "n", nil, []string{"only"}); got != "--- o\n+++ n\n@@ -0,0 +1 @@\n+only\n" {
		t.Fatalf("an addition to nothing: %q", got)
	}
}
