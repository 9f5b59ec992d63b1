package cli

import (
	"strings"
	"testing"
)

// The packages an npx command line runs are found past npx's own flags
// (or in its -p/--package values); each names an exact version or is
// listed, and a path, URL or git spec is not a registry package.
func TestUnpinnedNpx_ListsPackagesWithoutAnExactVersion(t *testing.T) {
	for _, c := range []struct {
		command string
		args    []string
		want    string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/w"}, "@modelcontextprotocol/server-filesystem"},
		{"npx", []string{"-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/w"}, ""},
		{"/usr/local/bin/npx", []string{"mcp-server-fetch@latest"}, "mcp-server-fetch@latest"},
		{"npx", []string{"--yes", "some-server@^1.2.0", "--flag", "x@y"}, "some-server@^1.2.0"},
		{"npx", []string{"some-server@1.2.3-beta.1"}, ""},
		{"npx", []string{"-p", "a@1.0.0", "--package=b", "a-bin"}, "b"},
		{"npx", []string{"--", "c"}, "c"},
		{"NPX.CMD", []string{"d"}, "d"},
		{"npx", []string{"github:owner/repo"}, ""},
		{"npx", []string{"./local-server"}, ""},
		{"node", []string{"server.js"}, ""},
	} {
		got := strings.Join(unpinnedNpx(c.command, c.args), ",")
		if got != c.want {
			t.Errorf("unpinnedNpx(%q, %q) = %q, want %q", c.command, c.args, got, c.want)
		}
	}
}
