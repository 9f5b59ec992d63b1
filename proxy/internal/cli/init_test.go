package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/proxy/internal/upstreamtest"
)

// A host's server that offers no tools (a prompt only) is pinned and
// written with "rules": {}, which the proxy reads as "offers no tools",
// not left out; the configuration init writes loads.
func TestInit_ServerWithNoToolsIsWrittenWithEmptyRules(t *testing.T) {
	endpoint := upstreamtest.PromptOnly(t)
	base := t.TempDir()
	t.Setenv("HOME", base)
	host := filepath.Join(base, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"bare": map[string]any{"type": "http", "url": endpoint}}})
	if err := os.WriteFile(host, b, 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(base, "agentrt", "proxy.json")
	code, out, errs := run("init", "-from", host, "-config", config, "-no-login")
	if code != ExitOK || !strings.Contains(out, "1 server(s), 0 left out") {
		t.Fatalf("init: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Servers) != 1 {
		t.Fatalf("the written configuration: %v\n%s", err, raw)
	}
	if rules, ok := doc.Servers[0]["rules"]; !ok || string(rules) != "{}" {
		t.Fatalf(`the server's rules are %q (present %v), want {}`+"\n%s", rules, ok, raw)
	}
	if _, err := proxy.LoadConfig(config); err != nil {
		t.Fatalf("the written configuration does not load: %v", err)
	}
}
