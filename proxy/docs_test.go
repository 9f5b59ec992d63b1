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
	if s["oauth-config"] == "" {
		t.Fatal("docs/proxy.md has no oauth-config snippet")
	}
	opath := filepath.Join(dir, "oauth.json")
	if err := os.WriteFile(opath, []byte(s["oauth-config"]), 0o600); err != nil {
		t.Fatal(err)
	}
	ocfg, err := proxy.LoadConfig(opath)
	if err != nil || ocfg.Servers[0].OAuth == nil || ocfg.Servers[0].OAuth.Grant != proxy.GrantAuthorizationCode {
		t.Fatalf("the OAuth configuration example: %v", err)
	}
	if cfg.Session != "desktop" || len(cfg.Servers) != 1 || len(cfg.Servers[0].Rules) != 3 {
		t.Fatalf("the configuration example read as %+v", cfg)
	}
}

// The onboarding path docs/proxy.md opens with, and the README's proxy
// block, are commands agentrt-proxy takes: each one's flags parse (run in
// an empty HOME and directory, so no real host file is read), and the
// README shows the path in five commands or fewer.
func TestDocs_OnboardingCommandsParse(t *testing.T) {
	s := snippets(t)
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	home := os.Getenv("HOME")
	runLine := func(where, line string) {
		t.Helper()
		line = strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
		f := strings.Fields(strings.ReplaceAll(line, "~", home))
		if len(f) < 2 || f[0] != "agentrt-proxy" {
			t.Fatalf("%s: %q is not an agentrt-proxy command", where, line)
		}
		var out, errb bytes.Buffer
		if code := cli.Run(context.Background(), f[1:], strings.NewReader(""), &out, &errb); code == cli.ExitUsage {
			t.Fatalf("%s: agentrt-proxy refuses %q as usage: %s", where, line, errb.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(s["onboard"]), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], " init -from ") || !strings.Contains(lines[1], " review ") || !strings.Contains(lines[2], " check ") {
		t.Fatalf("the onboard snippet is not init, review, check:\n%s", s["onboard"])
	}
	for _, l := range lines {
		runLine("docs/proxy.md onboard", l)
	}
	section := string(b)[strings.Index(string(b), "## An MCP host under policy"):]
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	if block == nil {
		t.Fatal("the README's proxy section has no sh block")
	}
	cmds := strings.Split(strings.TrimSpace(block[1]), "\n")
	if len(cmds) > 5 {
		t.Fatalf("the README's proxy path takes %d commands, more than five", len(cmds))
	}
	saw := map[string]bool{}
	for _, l := range cmds {
		if strings.HasPrefix(l, "(cd proxy && go build") {
			continue
		}
		runLine("README", l)
		saw[strings.Fields(l)[1]] = true
	}
	if !saw["init"] || !saw["review"] || !saw["check"] {
		t.Fatalf("the README's proxy path is not init, review, check: %q", cmds)
	}
}
