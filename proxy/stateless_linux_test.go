//go:build linux

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// statelessUpstream is a server of the 2026-07-28 revision only: the
// go-sdk's stateless streamable HTTP handler, its server limited to that
// revision, so initialize and sessions get nothing. Its tool "lookup"
// binds its "region" argument to the Mcp-Param-Region header, which the
// SDK's server checks against the body. Every POST it took is kept.
type statelessUpstream struct {
	url string

	mu   sync.Mutex
	seen []seenRequest
}

// seenRequest is what one POST carried.
type seenRequest struct {
	Call                                                          bool
	Method, HeaderMethod, HeaderName, HeaderRegion, HeaderVersion string
	Meta                                                          map[string]json.RawMessage
}

// protect, when set, wraps the MCP handler and may add to the server's
// mux; it is given the server's MCP URL.
func newStatelessUpstream(t testing.TB, protect func(mcpURL string, h http.Handler, mux *http.ServeMux) http.Handler) *statelessUpstream {
	u := &statelessUpstream{}
	s := sdk.NewServer(&sdk.Implementation{Name: "next", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}})
	s.AddTool(&sdk.Tool{Name: "lookup", Description: "Looks a word up in a region's dictionary.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"q":{"type":"string"}},"required":["q"]}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Region, Q string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Q + " in " + a.Region}}}, nil
		})
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			u.mu.Lock()
			u.seen = append(u.seen, seenRequest{Call: msg.ID != nil, Method: msg.Method, HeaderMethod: r.Header.Get("Mcp-Method"), HeaderName: r.Header.Get("Mcp-Name"),
				HeaderRegion: r.Header.Get("Mcp-Param-Region"), HeaderVersion: r.Header.Get("Mcp-Protocol-Version"), Meta: msg.Params.Meta})
			u.mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	if protect != nil {
		h = protect(u.url, h, mux)
	}
	mux.Handle("/mcp", h)
	return u
}

func (u *statelessUpstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.seen...)
}

// checkStateless fails unless every message the server took was of the
// 2026-07-28 revision: no initialize, a server/discover first, the
// Mcp-Method header naming the body's method, and on every request (a
// message with an id) the protocol version, client info and capabilities
// in _meta.
func (u *statelessUpstream) checkStateless(t *testing.T) []seenRequest {
	t.Helper()
	seen := u.requests()
	mustf(t, len(seen) > 0 && seen[0].Method == "server/discover", "the first request was not server/discover: %+v", seen)
	for _, r := range seen {
		mustf(t, r.Method != "initialize", "the proxy sent initialize to a 2026-07-28 server")
		mustf(t, r.HeaderMethod == r.Method, "%s went with Mcp-Method %q", r.Method, r.HeaderMethod)
		mustf(t, r.HeaderVersion == "2026-07-28", "%s went with Mcp-Protocol-Version %q", r.Method, r.HeaderVersion)
		if !r.Call {
			continue
		}
		for _, k := range []string{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities"} {
			mustf(t, r.Meta[k] != nil, "%s carried no %s in _meta: %v", r.Method, k, r.Meta)
		}
		mustf(t, string(r.Meta["io.modelcontextprotocol/protocolVersion"]) == `"2026-07-28"`, "%s: _meta protocolVersion %s", r.Method, r.Meta["io.modelcontextprotocol/protocolVersion"])
	}
	return seen
}

// A server that speaks only 2026-07-28 (stateless, no initialize) is
// pinned and checked by the real binary, and a host's call reaches it
// through the proxy with the operator's fixed region: the Mcp-Name and
// Mcp-Param-Region headers are computed on the body as sent, after the
// fixed value went in, so the server's own header check accepts it.
func TestUpstream_StatelessServerIsPinnedCheckedAndCalled(t *testing.T) {
	proxyBin, _ := binaries(t)
	up := newStatelessUpstream(t, nil)
	dir := filepath.Join(t.TempDir(), "proxy")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"database": "runs.db", "session": "next", "hold": "0s", "servers": []any{map[string]any{
		"name": "next", "endpoint": up.url, "manifest": "next.manifest.json", "connect_timeout": "20s", "default_timeout": "10s",
		"rules": map[string]any{"lookup": map[string]any{"side_effect": "read_only", "fixed": map[string]any{"region": "eu"}}},
	}}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	config := writeFile(t, filepath.Join(dir, "proxy.json"), string(b))
	out, err := exec.Command(proxyBin, "pin", "-config", config).CombinedOutput()
	mustf(t, err == nil, "agentrt-proxy pin: %v\n%s", err, out)
	out, err = exec.Command(proxyBin, "check", "-config", config).CombinedOutput()
	mustf(t, err == nil && strings.Contains(string(out), "registered lookup"), "agentrt-proxy check: %v\n%s", err, out)

	cmd := exec.Command(proxyBin, "-config", config)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	mustf(t, err == nil, "connect: %v\nstderr: %s", err, stderr)
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	mustf(t, err == nil, "list: %v", err)
	name := ""
	for _, tl := range tools.Tools {
		if strings.HasSuffix(tl.Name, "lookup") {
			name = tl.Name
		}
	}
	mustf(t, name != "", "the proxy does not offer lookup: %v", tools.Tools)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"q": "fjord"}})
	mustf(t, err == nil && !res.IsError && text(res) == "fjord in eu", "call: %v %v\nstderr: %s", text(res), err, stderr)

	calls := 0
	for _, r := range up.checkStateless(t) {
		if r.Method == "tools/call" {
			calls++
			mustf(t, r.HeaderName == "lookup" && r.HeaderRegion == "eu", "tools/call went with Mcp-Name %q and Mcp-Param-Region %q", r.HeaderName, r.HeaderRegion)
		}
	}
	mustf(t, calls == 1, "the server took %d tools/call requests, want 1", calls)
}

// A 2026-07-28-only server behind OAuth: init finds it asks for a login,
// logs in (browser step scripted) and pins it; login runs again on the
// configuration init wrote, and check loads it with the stored tokens.
// Every request the server took was stateless.
func TestInit_StatelessOAuthServerIsLoggedInPinnedAndChecked(t *testing.T) {
	proxyBin, _ := binaries(t)
	as := newTestAS(t)
	up := newStatelessUpstream(t, func(mcpURL string, h http.Handler, mux *http.ServeMux) http.Handler {
		prm := strings.TrimSuffix(mcpURL, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
		mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: mcpURL, AuthorizationServers: []string{as.url}, ScopesSupported: []string{"mcp:tools"}}))
		return auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(h)
	})
	home := t.TempDir()
	config, _, _ := initFromHTTPHost(t, proxyBin, home, "next", up.url)
	m, err := os.ReadFile(filepath.Join(home, "agentrt", "next.manifest.json"))
	mustf(t, err == nil && strings.Contains(string(m), `"lookup"`), "the manifest: %v %s", err, m)

	// The operator classifies the tool, as review would.
	var c map[string]any
	raw, _ := os.ReadFile(config)
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	c["servers"].([]any)[0].(map[string]any)["rules"] = map[string]any{"lookup": map[string]any{"side_effect": "read_only"}}
	raw, _ = json.MarshalIndent(c, "", "  ")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proxyBin, "login", "-config", config, "next")
	cmd.Env = append(os.Environ(), "HOME="+home)
	stdout, stderr, _, err := runWithBrowser(t, cmd)
	mustf(t, err == nil, "login: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	cmd = exec.Command(proxyBin, "check", "-config", config)
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	mustf(t, err == nil && strings.Contains(string(out), "lookup"), "check: %v\n%s", err, out)
	up.checkStateless(t)
}
