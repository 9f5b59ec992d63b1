//go:build linux

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/mcp"
)

// guardedUpstream is a streamable HTTP MCP server that answers only
// requests carrying every header in want; others get 401.
func guardedUpstream(t *testing.T, want map[string]string) (url string, refused *atomic.Int64) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "read", Description: "Reads a file.", InputSchema: json.RawMessage(readSchema),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	refused = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range want {
			if r.Header.Get(k) != v {
				refused.Add(1)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", refused
}

// init imports a host's HTTP headers and ${VAR} references as secret
// references: with -secret-store env the configuration names the
// variables and the host entry passes them on; with file init copies the
// values into owner-only files under secrets/. Either way the servers are
// pinned (the guarded one answers only with the right headers), and no
// secret's bytes are in any file init writes except those secret files,
// nor in its output.
func TestInit_ImportsHeadersAndVariablesAsSecrets(t *testing.T) {
	proxyBin, _ := binaries(t)
	const (
		remoteToken = "rt-secret-token-0a1b2c3d4e5f"
		apiKey      = "literal-api-key-99887766"
		everyToken  = "ev-secret-var-5566778899"
	)
	url, _ := guardedUpstream(t, map[string]string{"Authorization": "Bearer " + remoteToken, "X-Api-Key": apiKey})
	secrets := []string{remoteToken, apiKey, everyToken}

	for _, mode := range []string{"env", "file"} {
		t.Run(mode, func(t *testing.T) {
			base := t.TempDir()
			home := filepath.Join(base, "home")
			if err := os.Mkdir(home, 0o700); err != nil {
				t.Fatal(err)
			}
			hostFile := filepath.Join(base, "project", ".mcp.json")
			if err := os.MkdirAll(filepath.Dir(hostFile), 0o700); err != nil {
				t.Fatal(err)
			}
			host := map[string]any{"mcpServers": map[string]any{
				"remote": map[string]any{"type": "http", "url": url,
					"headers": map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Api-Key": apiKey}},
				"everything": map[string]any{"command": "node", "args": []string{everythingEntry(t), "stdio"},
					"env": map[string]string{"EVERYTHING_TOKEN": "${env:EVERY_TOKEN}"}},
			}}
			b, _ := json.MarshalIndent(host, "", "  ")
			if err := os.WriteFile(hostFile, b, 0o600); err != nil {
				t.Fatal(err)
			}
			outDir := filepath.Join(base, "agentrt")
			config := filepath.Join(outDir, "proxy.json")
			cmd := exec.Command(proxyBin, "init", "-from", hostFile, "-config", config, "-secret-store", mode)
			cmd.Env = append(os.Environ(), "HOME="+home, "REMOTE_TOKEN="+remoteToken, "EVERY_TOKEN="+everyToken)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("init: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			out := stdout.String() + stderr.String()
			for _, s := range secrets {
				mustf(t, !strings.Contains(out, s), "init printed a secret:\n%s", out)
			}
			mustf(t, strings.Contains(stdout.String(), "2 server(s), 0 left out"), "init did not carry both servers:\n%s\n%s", stdout.String(), stderr.String())

			// No secret in any file init wrote, but the owner-only secret
			// files; in env mode only the literal header is one.
			inSecrets := map[string]bool{}
			err := filepath.WalkDir(outDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				for _, s := range secrets {
					if !bytes.Contains(b, []byte(s)) {
						continue
					}
					rel, _ := filepath.Rel(outDir, p)
					mustf(t, strings.HasPrefix(rel, "secrets/"), "%s holds a secret:\n%s", rel, b)
					mustf(t, fileMode(t, p) == 0o600, "%s is %v, want 0600", rel, fileMode(t, p))
					inSecrets[s] = true
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			wantStored := map[string]bool{apiKey: true}
			if mode == "file" {
				wantStored[remoteToken], wantStored[everyToken] = true, true
			}
			for _, s := range secrets {
				mustf(t, inSecrets[s] == wantStored[s], "secret %q in the secret store: %v, want %v", s[:6], inSecrets[s], wantStored[s])
			}

			cfg, err := LoadConfig(config)
			if err != nil {
				t.Fatal(err)
			}
			var remote, every ServerConfig
			for _, s := range cfg.Servers {
				switch s.Name {
				case "remote":
					remote = s
				case "everything":
					every = s
				}
			}
			auth, key := remote.Headers["Authorization"], remote.Headers["X-Api-Key"]
			mustf(t, auth.Prefix == "Bearer " && key.File != "" && key.Prefix == "", "header references: %+v %+v", auth, key)
			ev := every.SecretEnv["EVERYTHING_TOKEN"]
			if mode == "env" {
				mustf(t, auth.Env == "REMOTE_TOKEN" && ev.Env == "EVERY_TOKEN", "env references: %+v %+v", auth, ev)
				mustf(t, strings.Contains(stdout.String(), `"REMOTE_TOKEN": "${REMOTE_TOKEN}"`) &&
					strings.Contains(stdout.String(), `"EVERY_TOKEN": "${env:EVERY_TOKEN}"`),
					"the host entry does not pass the variables on, as the host wrote them:\n%s", stdout.String())
			} else {
				mustf(t, auth.File != "" && ev.File != "", "file references: %+v %+v", auth, ev)
			}

			// The references resolve to the secrets: the guarded server
			// answers the proxy's connection.
			lookup := func(k string) (string, bool) {
				v, ok := map[string]string{"REMOTE_TOKEN": remoteToken, "EVERY_TOKEN": everyToken}[k]
				return v, ok
			}
			srv, err := remote.Dial(DialOptions{Lookup: lookup})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mcp.Pin(context.Background(), srv); err != nil {
				t.Fatalf("the guarded server refused the resolved headers: %v", err)
			}
			if mode == "env" {
				_, err := remote.Dial(DialOptions{Lookup: func(string) (string, bool) { return "", false }})
				mustf(t, errors.Is(err, ErrSecret) && strings.Contains(err.Error(), "REMOTE_TOKEN"), "a missing variable: %v", err)
			}
		})
	}
}
