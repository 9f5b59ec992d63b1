package proxy

import (
	"errors"
	"path/filepath"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// A server entry's "protocol" reaches mcp.Server: left out it is empty
// (the newest the server offers), and 2025-11-25 or 2026-07-28 pass as
// written; any other value, or 2026-07-28 on an sse server, is refused in
// one sentence naming the field.
func TestConfig_ProtocolReachesTheServerAndIsChecked(t *testing.T) {
	entry := func(extra string) string {
		return `{"database":"runs.db","servers":[{"name":"web","endpoint":"https://mcp.example.com/mcp",` + extra +
			`"manifest":"web.manifest.json","rules":{}}]}`
	}
	for _, c := range []struct{ extra, want string }{{"", ""}, {`"protocol":"2025-11-25",`, "2025-11-25"}, {`"protocol":"2026-07-28",`, "2026-07-28"}} {
		path := writeFile(t, filepath.Join(t.TempDir(), "proxy.json"), entry(c.extra))
		cfg, err := LoadConfig(path)
		mustf(t, err == nil, "%s: %v", c.extra, err)
		mustf(t, cfg.Servers[0].Server().Protocol == c.want, "%s: mcp.Server.Protocol %q", c.extra, cfg.Servers[0].Server().Protocol)
	}
	for _, extra := range []string{`"protocol":"2024-11-05",`, `"protocol":"2026-07-28","transport":"sse",`} {
		path := writeFile(t, filepath.Join(t.TempDir(), "proxy.json"), entry(extra))
		_, err := LoadConfig(path)
		var ce *agentrt.ConfigError
		mustf(t, errors.As(err, &ce) && ce.Field == "servers[0].protocol", "%s: %v", extra, err)
	}
}
