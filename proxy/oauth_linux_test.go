//go:build linux

package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The whole OAuth flow through the real binaries, against a local
// authorization server and a protected MCP server on loopback:
// `agentrt-proxy login` prints the URL, the scripted browser step follows
// it, the redirect reaches a listener that is gone once login exits, and
// the tokens land owner-only. pin and check work with them; a host calls a
// read through the proxy, a write waits for approval (agentrt approve) and
// runs once. No access or refresh token the server issued appears in any
// output, log, configuration, manifest, database, index or event; only in
// the token file.
func TestLogin_TokensAreOwnerOnlyAndNeverPrinted(t *testing.T) {
	proxyBin, agentrtBin := binaries(t)
	as := newTestAS(t)
	pu := newProtectedUpstream(t, as)
	dir := filepath.Join(t.TempDir(), "proxy")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"database": "runs.db", "session": "desktop", "hold": "0s",
		"policy": map[string]any{"local_mutation": "require_approval"},
		"servers": []any{map[string]any{
			"name": "up", "endpoint": pu.mcpURL, "manifest": "up.manifest.json", "default_timeout": "10s",
			"oauth": map[string]any{},
			"rules": map[string]any{
				"read":  map[string]any{"side_effect": "read_only"},
				"write": map[string]any{"side_effect": "local_mutation"},
			},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	config := writeFile(t, filepath.Join(dir, "proxy.json"), string(b))
	var outputs []string

	// login, with the browser step scripted from the URL on stderr.
	stdout, stderr, authURL, err := runWithBrowser(t, exec.Command(proxyBin, "login", "-config", config, "up"))
	mustf(t, err == nil, "login: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	outputs = append(outputs, stdout, stderr)
	au, _ := url.Parse(authURL)
	redirect, _ := url.Parse(au.Query().Get("redirect_uri"))
	mustf(t, redirect.Hostname() == "127.0.0.1", "the redirect is not loopback: %s", redirect)
	if c, err := net.DialTimeout("tcp", redirect.Host, time.Second); err == nil {
		c.Close()
		t.Fatalf("the redirect listener %s is still there after login", redirect.Host)
	}
	tokens := filepath.Join(dir, "up.oauth.json")
	mustf(t, fileMode(t, tokens) == 0o600, "the token file is %v", fileMode(t, tokens))

	run := func(args ...string) string {
		out, err := exec.Command(proxyBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("agentrt-proxy %v: %v\n%s", args, err, out)
		}
		outputs = append(outputs, string(out))
		return string(out)
	}
	run("pin", "-config", config)
	mustf(t, strings.Contains(run("check", "-config", config), "registered write as up_write"), "check does not register the write")

	s := &procSetup{dir: dir, config: config, db: filepath.Join(dir, "runs.db"), proxyBin: proxyBin, agentrtBin: agentrtBin}
	h := s.start(t)
	outputs = append(outputs, h.expect("", "up_read", `{"path":"a"}`))
	outputs = append(outputs, h.expect(StatusPendingApproval, "up_write", `{"path":"w","content":"x"}`))
	mustf(t, pu.count() == 0, "the write ran before approval")
	runID, id, _ := h.lastApproval(1)
	outputs = append(outputs, s.agentrt(t, "approve", runID, "-approval", id))
	outputs = append(outputs, h.expect("", "up_write", `{"path":"w","content":"x"}`))
	outputs = append(outputs, h.expect(StatusDuplicate, "up_write", `{"path":"w","content":"x"}`))
	mustf(t, pu.count() == 1, "the write ran %d times", pu.count())
	outputs = append(outputs, s.agentrt(t, "show", runID))
	h.cs.Close()
	h.cmd.Wait()
	outputs = append(outputs, h.stderr.String())

	issued := as.tokens()
	mustf(t, len(issued) >= 2, "the server issued %d tokens", len(issued))
	tb, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tok := range issued {
		found = found || bytes.Contains(tb, []byte(tok))
		for i, o := range outputs {
			mustf(t, !strings.Contains(o, tok), "output %d shows a token:\n%s", i, o)
		}
	}
	mustf(t, found, "the token file holds none of the issued tokens")
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == tokens {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, tok := range issued {
			mustf(t, !bytes.Contains(b, []byte(tok)), "%s holds a token", filepath.Base(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runWithBrowser runs cmd and follows the first URL it prints on stderr
// as a browser would (the scripted browser step), and returns its output,
// the URL and how it exited.
// initFromHTTPHost writes a host file in home naming one HTTP server, name
// at url, runs init on it with HOME=home and the browser step scripted,
// and requires that it took the one server. It returns the configuration
// path init wrote and what init printed.
func initFromHTTPHost(t *testing.T, proxyBin, home, name, url string) (config, stdout, stderr string) {
	t.Helper()
	hostFile := filepath.Join(home, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"type": "http", "url": url}}})
	if err := os.WriteFile(hostFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	config = filepath.Join(home, "agentrt", "proxy.json")
	cmd := exec.Command(proxyBin, "init", "-from", hostFile, "-config", config)
	cmd.Env = append(os.Environ(), "HOME="+home)
	stdout, stderr, _, err := runWithBrowser(t, cmd)
	mustf(t, err == nil && strings.Contains(stdout, "1 server(s), 0 left out"), "init: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	return config, stdout, stderr
}

func runWithBrowser(t *testing.T, cmd *exec.Cmd) (stdout, stderr, authURL string, err error) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout = &out
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb syncBuffer
	urls := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			errb.Write([]byte(line + "\n"))
			if strings.HasPrefix(line, "http") {
				select {
				case urls <- line:
				default:
				}
			}
		}
	}()
	select {
	case authURL = <-urls:
		if berr := scriptedBrowser(t, authURL); berr != nil {
			t.Errorf("the browser step: %v", berr)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Errorf("no URL was printed")
	}
	err = cmd.Wait()
	pw.Close()
	<-done
	return out.String(), errb.String(), authURL, err
}

// init finds that a host's HTTP server asks for OAuth, logs in to it (the
// same flow as login, the browser step scripted), pins it with the stored
// tokens and writes an oauth entry; the tokens are in no output and no
// file but the owner-only token file.
func TestInit_OAuthServerIsLoggedInAndPinned(t *testing.T) {
	proxyBin, _ := binaries(t)
	as := newTestAS(t)
	pu := newProtectedUpstream(t, as)
	base := t.TempDir()
	config, stdout, stderr := initFromHTTPHost(t, proxyBin, base, "issues", pu.mcpURL)
	cfg, err := LoadConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Servers[0].OAuth
	mustf(t, o != nil && o.Tokens == filepath.Join(base, "agentrt", "issues.oauth.json"), "the oauth entry: %+v", o)
	mustf(t, fileMode(t, o.Tokens) == 0o600, "the token file is %v", fileMode(t, o.Tokens))
	m, err := os.ReadFile(filepath.Join(base, "agentrt", "issues.manifest.json"))
	mustf(t, err == nil && strings.Contains(string(m), `"read"`), "the manifest: %v", err)
	for _, tok := range as.tokens() {
		mustf(t, !strings.Contains(stdout+stderr, tok), "init printed a token")
		for _, f := range []string{config, filepath.Join(base, "agentrt", "issues.manifest.json")} {
			b, _ := os.ReadFile(f)
			mustf(t, !bytes.Contains(b, []byte(tok)), "%s holds a token", f)
		}
	}
}
