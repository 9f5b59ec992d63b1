package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/proxy/internal/cli"
)

// snippets reads docs/proxy.md's fenced blocks, each named by the
// <!-- snippet: NAME --> line before it.
func snippets(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "proxy.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- snippet: ([a-z-]+) -->\n```[a-z]*\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	return out
}

func strictJSON(t *testing.T, name, body string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("snippet %s: %v\n%s", name, err, body)
	}
}

// checkLaunch holds a host's command line to what agentrt-proxy takes:
// the binary, then -config and an absolute path to the configuration, and
// agentrt-proxy's own flag parsing accepts it.
func checkLaunch(t *testing.T, name, command string, args []string) {
	t.Helper()
	if filepath.Base(command) != "agentrt-proxy" || !filepath.IsAbs(command) {
		t.Fatalf("snippet %s: command %q", name, command)
	}
	if len(args) != 2 || args[0] != "-config" || !filepath.IsAbs(args[1]) || !strings.HasSuffix(args[1], ".json") {
		t.Fatalf("snippet %s: args %q", name, args)
	}
	// The flags parse: check with them gets past usage to the file.
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), append([]string{"check"}, args...), strings.NewReader(""), &out, &errb)
	if code == cli.ExitUsage {
		t.Fatalf("snippet %s: agentrt-proxy refuses %q as usage: %s", name, args, errb.String())
	}
}

// Every host snippet in docs/proxy.md parses as the host's own format and
// starts agentrt-proxy with -config; the configuration example loads.
func TestDocs_HostSnippetsParse(t *testing.T) {
	s := snippets(t)
	for _, name := range []string{"config", "claude-desktop", "claude-code", "cursor", "vscode"} {
		if s[name] == "" {
			t.Fatalf("docs/proxy.md has no %s snippet", name)
		}
	}
	type stdio struct {
		Type    string   `json:"type,omitempty"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	for _, name := range []string{"claude-desktop", "cursor"} {
		var doc struct {
			MCPServers map[string]stdio `json:"mcpServers"`
		}
		strictJSON(t, name, s[name], &doc)
		srv, ok := doc.MCPServers["gated"]
		if !ok || len(doc.MCPServers) != 1 || srv.Type != "" {
			t.Fatalf("snippet %s: %+v", name, doc)
		}
		checkLaunch(t, name, srv.Command, srv.Args)
	}
	var vs struct {
		Servers map[string]stdio `json:"servers"`
	}
	strictJSON(t, "vscode", s["vscode"], &vs)
	if srv := vs.Servers["gated"]; srv.Type != "stdio" {
		t.Fatalf("vscode: %+v", vs)
	}
	checkLaunch(t, "vscode", vs.Servers["gated"].Command, vs.Servers["gated"].Args)

	// claude mcp add [--scope S] NAME -- COMMAND ARGS...
	f := strings.Fields(strings.TrimSpace(s["claude-code"]))
	if len(f) < 6 || f[0] != "claude" || f[1] != "mcp" || f[2] != "add" {
		t.Fatalf("claude-code: %q", f)
	}
	rest := f[3:]
	if rest[0] == "--scope" {
		if rest[1] != "user" && rest[1] != "project" && rest[1] != "local" {
			t.Fatalf("claude-code scope %q", rest[1])
		}
		rest = rest[2:]
	}
	if len(rest) < 3 || rest[0] != "gated" || rest[1] != "--" {
		t.Fatalf("claude-code: %q", f)
	}
	checkLaunch(t, "claude-code", rest[2], rest[3:])

	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.json")
	if err := os.WriteFile(path, []byte(s["config"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := proxy.LoadConfig(path)
	if err != nil {
		t.Fatalf("the configuration example: %v", err)
	}
	if cfg.Session != "desktop" || len(cfg.Servers) != 1 || len(cfg.Servers[0].Rules) != 3 {
		t.Fatalf("the configuration example read as %+v", cfg)
	}
}
