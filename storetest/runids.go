package storetest

import (
	"context"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// runIDsByPrefix checks the short-id lookup: the ids that begin with a
// prefix, in byte order and no more than asked, whatever the database's
// collation makes of punctuation; none for a prefix nothing begins with;
// an empty prefix and a limit below 1 refused.
func runIDsByPrefix(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	f, ok := s.(agentrt.RunIDFinder)
	if !ok {
		t.Fatalf("%T does not implement agentrt.RunIDFinder", s)
	}
	for _, id := range []string{"claude-desktop.0a1c", "claude-desktop.0a1b", "claude-d", "claude.x", "a.c", "a-b", "a/z", "é1", "ê", "0190aa"} {
		insertRun(t, s, id)
	}
	cases := []struct {
		prefix string
		limit  int
		want   string
	}{
		{"claude-d", 10, "claude-d claude-desktop.0a1b claude-desktop.0a1c"},
		{"claude-d", 2, "claude-d claude-desktop.0a1b"},
		{"claude-desktop.0a1b", 10, "claude-desktop.0a1b"},
		{"claude", 10, "claude-d claude-desktop.0a1b claude-desktop.0a1c claude.x"},
		{"a-", 10, "a-b"}, // not a.c, which a linguistic collation sorts between a- and a.
		{"a.", 10, "a.c"},
		{"é", 10, "é1"},
		{"0190", 10, "0190aa"},
		{"z", 10, ""},
		{"claude-desktop.0a1bX", 10, ""},
	}
	for _, c := range cases {
		got, err := f.RunIDsByPrefix(ctx, c.prefix, c.limit)
		must(t, err)
		if strings.Join(got, " ") != c.want {
			t.Errorf("RunIDsByPrefix(%q, %d) = %q, want %q", c.prefix, c.limit, got, c.want)
		}
	}
	if _, err := f.RunIDsByPrefix(ctx, "", 10); err == nil {
		t.Error("an empty prefix was accepted")
	}
	if _, err := f.RunIDsByPrefix(ctx, "a", 0); err == nil {
		t.Error("a limit of 0 was accepted")
	}
}
