package proxy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
)

// Suggest reads the class a tool's annotations hint at: readOnlyHint
// first, then destructiveHint, else remote_mutation (which waits for
// approval under the default policy), each with its reason; what it
// suggests is never disputed by the same hints at load.
func TestSuggest_FollowsTheHints(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		a    *mcp.Annotations
		want agentrt.SideEffect
		why  string
	}{
		{&mcp.Annotations{ReadOnlyHint: &yes}, agentrt.ReadOnly, "readOnlyHint"},
		{&mcp.Annotations{ReadOnlyHint: &yes, DestructiveHint: &yes}, agentrt.ReadOnly, "readOnlyHint"},
		{&mcp.Annotations{ReadOnlyHint: &no, DestructiveHint: &yes}, agentrt.Destructive, "destructiveHint"},
		{&mcp.Annotations{DestructiveHint: &no}, agentrt.RemoteMutation, "neither"},
		{nil, agentrt.RemoteMutation, "no annotations"},
	}
	for _, c := range cases {
		got, why := Suggest(mcp.PinnedTool{Annotations: c.a})
		if got != c.want || !strings.Contains(why, c.why) {
			t.Fatalf("%+v: %s (%s), want %s", c.a, got, why, c.want)
		}
		if d := mcp.HintDispute(got, c.a); d != "" {
			t.Fatalf("%+v: the suggestion %s is disputed by its own hints: %s", c.a, got, d)
		}
	}
	if agentrt.DefaultPolicy()[agentrt.RemoteMutation] != agentrt.RequireApproval {
		t.Fatal("remote_mutation no longer waits for approval by default; the reason Suggest gives is wrong")
	}
}

// A rule marked as a suggestion loads (review needs to read it) but is
// not handed to mcp.Load, so its tool is not offered; Suggested names it;
// a configuration of suggestions only is ErrNoTools as a
// SuggestionsError naming every tool and review.
func TestConfig_SuggestionIsNotARule(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "proxy.json"), `{"database":"runs.db","servers":[{"name":"fs","command":["node","s.js"],
	"manifest":"fs.manifest.json","rules":{"read":{"side_effect":"read_only","suggestion":"the server claims readOnlyHint"},
	"write":{"side_effect":"local_mutation"}}}]}`)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	rules := cfg.Servers[0].MCPRules()
	if _, ok := rules["read"]; ok || len(rules) != 1 {
		t.Fatalf("rules handed to Load: %v", rules)
	}
	s := cfg.Suggested()
	if len(s) != 1 || s[0].String() != "fs.read" || s[0].Class != agentrt.ReadOnly || s[0].Reason != "the server claims readOnlyHint" {
		t.Fatalf("suggested %+v", s)
	}
	if err := noTools(cfg); !errors.Is(err, ErrNoTools) || !strings.Contains(err.Error(), "fs.read") || !strings.Contains(err.Error(), "agentrt-proxy review -config "+path) {
		t.Fatalf("noTools: %v", err)
	}
	if line := suggestionLine(cfg, s[0]); !strings.Contains(line, "tool read is not offered: its rule is a suggestion") {
		t.Fatalf("line %q", line)
	}
}
