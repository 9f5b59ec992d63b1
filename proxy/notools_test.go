package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy/internal/upstreamtest"
)

// A server that offers no tool at all (only a prompt, say) is not a
// misconfiguration: under `"rules": {}` it pins, loads and is served, the
// host sees the status tool alone and the server's prompt, and stderr says
// the server offers no tools. A missing rules object is still refused with
// its remedy, and a server whose tools are all unclassified still leaves a
// proxy with nothing to start.
func TestProxy_UpstreamWithNoToolsIsServedWithAWarning(t *testing.T) {
	endpoint := upstreamtest.PromptOnly(t)
	dir := t.TempDir()
	doc := map[string]any{"database": "runs.db", "session": "bare", "hold": "0s",
		"servers": []any{map[string]any{"name": "bare", "endpoint": endpoint, "manifest": "bare.manifest.json",
			"surfaces": map[string]any{"prompts": "allow"}}}}
	write := func() string {
		b, _ := json.Marshal(doc)
		return writeFile(t, filepath.Join(dir, "proxy.json"), string(b))
	}
	_, err := LoadConfig(write())
	mustf(t, err != nil && strings.Contains(err.Error(), `"rules": {}`), "a server without rules: %v", err)

	doc["servers"].([]any)[0].(map[string]any)["rules"] = map[string]any{}
	cfg, err := LoadConfig(write())
	mustf(t, err == nil, "config with empty rules: %v", err)
	srv, err := cfg.Servers[0].Dial(DialOptions{})
	mustf(t, err == nil, "dial: %v", err)
	m, err := mcp.Pin(context.Background(), srv)
	mustf(t, err == nil && len(m.Tools) == 0, "pin: %v %v", m, err)
	mustf(t, mcp.WriteManifest(cfg.Servers[0].Manifest, m) == nil, "write manifest")

	_, err = Check(context.Background(), cfg)
	mustf(t, err == nil, "check of a server with no tools: %v", err)
	stderr := &syncBuffer{}
	p, err := New(context.Background(), cfg, Options{Stderr: stderr})
	mustf(t, err == nil, "New with a server that offers no tools: %v\n%s", err, stderr)
	defer p.Close()
	mustf(t, strings.Contains(stderr.String(), "server bare offers no tools"), "stderr does not say so:\n%s", stderr)
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, st) }()
	defer func() { cancel(); <-served }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	mustf(t, err == nil, "host connect: %v", err)
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	mustf(t, err == nil && len(tools.Tools) == 1 && tools.Tools[0].Name == cfg.StatusTool, "tools: %+v %v", tools, err)
	prompts, err := cs.ListPrompts(ctx, nil)
	mustf(t, err == nil && len(prompts.Prompts) == 1 && prompts.Prompts[0].Name == "greet", "prompts: %+v %v", prompts, err)

	// The same empty rules on a server that does offer tools: each one is
	// unclassified, nothing loads, and the proxy does not start.
	u := newTestUpstream(t)
	doc["servers"].([]any)[0].(map[string]any)["endpoint"] = u.url
	cfg, err = LoadConfig(write())
	mustf(t, err == nil, "config: %v", err)
	srv, _ = cfg.Servers[0].Dial(DialOptions{})
	m, err = mcp.Pin(context.Background(), srv)
	mustf(t, err == nil && len(m.Tools) > 0, "pin: %v", err)
	mustf(t, mcp.WriteManifest(cfg.Servers[0].Manifest, m) == nil, "write manifest")
	_, err = New(context.Background(), cfg, Options{Stderr: stderr})
	mustf(t, errors.Is(err, ErrNoTools), "New with every tool unclassified: %v", err)
	_, err = Check(context.Background(), cfg)
	mustf(t, errors.Is(err, ErrNoTools), "check with every tool unclassified: %v", err)
}
