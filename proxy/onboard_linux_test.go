//go:build linux

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The onboarding tests run the real agentrt-proxy binary against host
// configuration files written, in each host's documented format, into a
// temporary HOME, pointing at the real filesystem and everything servers
// from the mcp module's lock file, and at a server that cannot start.

// The secrets the fixtures give servers in env; neither may reach stdout
// or stderr.
const (
	everythingSecret = "sk-live-everything-0123456789abcdef"
	brokenSecret     = "sk-live-broken-fedcba9876543210"
)

// everythingEntry is the pinned everything server.
func everythingEntry(t *testing.T) string { t.Helper(); return pinnedServer(t, "server-everything") }

// onboard is one host's fixture: a HOME, a workspace (VS Code's file is
// the workspace's), a sandbox the filesystem server is given, and where
// init writes the proxy's configuration.
type onboard struct {
	host, home, work, sandbox, config string
	hostFile, original                string
	proxyBin                          string
}

// hostServers are the three definitions every fixture holds, typed when
// the host's format names the transport.
func hostServers(t *testing.T, sandbox string, typed bool) map[string]any {
	stdio := func(m map[string]any) map[string]any {
		if typed {
			m["type"] = "stdio"
		}
		return m
	}
	return map[string]any{
		"fs": stdio(map[string]any{"command": "node", "args": []string{filesystemEntry(t), sandbox}}),
		"everything": stdio(map[string]any{"command": "node", "args": []string{everythingEntry(t), "stdio"},
			"env": map[string]string{"EVERYTHING_TOKEN": everythingSecret}}),
		"broken": stdio(map[string]any{"command": "sh", "args": []string{"-c", `echo "cannot start: token $BROKEN_TOKEN" >&2; exit 3`},
			"env": map[string]string{"BROKEN_TOKEN": brokenSecret}}),
	}
}

func newOnboard(t *testing.T, host string) *onboard {
	proxyBin, _ := binaries(t)
	base := t.TempDir()
	o := &onboard{host: host, home: filepath.Join(base, "home"), work: filepath.Join(base, "work"), sandbox: filepath.Join(base, "sandbox"),
		config: filepath.Join(base, "agentrt", "proxy.json"), proxyBin: proxyBin}
	for _, d := range []string{o.home, o.work, o.sandbox} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(o.sandbox, "notes.txt"), "hello from the sandbox\n")
	servers := func(typed bool) string {
		b, _ := json.MarshalIndent(hostServers(t, o.sandbox, typed), "  ", "  ")
		return string(b)
	}
	// Each file in its host's documented shape, with keys of the host's
	// own beside the servers.
	var rel, body string
	switch host {
	case "claude-desktop":
		rel = filepath.Join(o.home, ".config", "Claude", "claude_desktop_config.json")
		body = "{\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": " + servers(false) + "\n}\n"
	case "claude-code":
		rel = filepath.Join(o.home, ".claude.json")
		body = "{\n  \"numStartups\": 12,\n  \"projects\": {\"/w\": {\"allowedTools\": [], \"mcpServers\": {}}},\n  \"mcpServers\": " + servers(true) +
			",\n  \"userID\": \"0f3c\"\n}\n"
	case "cursor":
		rel = filepath.Join(o.home, ".cursor", "mcp.json")
		body = "{\n  \"mcpServers\": " + servers(false) + "\n}\n"
	case "vscode":
		rel = filepath.Join(o.work, ".vscode", "mcp.json")
		body = "{\n  // Servers for this workspace.\n  \"inputs\": [{\"type\": \"promptString\", \"id\": \"unused\", \"password\": true}],\n  \"servers\": " +
			servers(true) + ",\n}\n"
	}
	if err := os.MkdirAll(filepath.Dir(rel), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rel, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	o.hostFile, o.original = rel, body
	return o
}

// run runs agentrt-proxy as the operator would in the workspace, with
// the fixture's HOME.
func (o *onboard) run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(o.proxyBin, args...)
	cmd.Dir = o.work
	cmd.Env = append(os.Environ(), "HOME="+o.home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{everythingSecret, brokenSecret} {
		if strings.Contains(out.String(), s) || strings.Contains(errb.String(), s) {
			t.Fatalf("agentrt-proxy %v printed a secret from env:\nstdout:\n%s\nstderr:\n%s", args, out.String(), errb.String())
		}
	}
	return code, out.String(), errb.String()
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// For each host: init reads its file, pins fs and everything (manifests
// and configuration owner-only, relative paths, the secret moved into the
// configuration), reports the server that cannot start and leaves it out;
// the proxy refuses to serve while every rule is a suggestion, naming the
// tools; review turns suggestions into rules (piped answers for Claude
// Desktop, -accept-read-only for the others); check passes; a go-sdk host
// started from the rewritten host file reaches the reviewed tools through
// the proxy and not the unreviewed ones; restore-host-config puts the
// original back byte for byte. No secret from env is printed at any step.
func TestOnboard_InitReviewCheckThenTheHostReachesTheTools(t *testing.T) {
	for _, host := range []string{"claude-desktop", "claude-code", "cursor", "vscode"} {
		t.Run(host, func(t *testing.T) {
			o := newOnboard(t, host)
			code, out, errs := o.run(t, "", "init", "-from", host, "-config", o.config, "-write-host-config")
			mustf(t, code == 0, "init: %d\n%s\n%s", code, out, errs)
			mustf(t, strings.Contains(out, "server fs: pinned 14 tool(s)") && strings.Contains(out, "server everything: pinned"), "init stdout:\n%s", out)
			mustf(t, strings.Contains(out, "read_text_file: suggested read_only (the server claims readOnlyHint)") &&
				strings.Contains(out, "write_file: suggested destructive (the server claims destructiveHint)"), "init stdout:\n%s", out)
			mustf(t, strings.Contains(errs, "server broken left out: it did not start") && strings.Contains(errs, "cannot start: token [redacted]"),
				"init stderr (the broken server's report and stderr tail):\n%s", errs)

			dir := filepath.Dir(o.config)
			for _, f := range []string{"proxy.json", "fs.manifest.json", "everything.manifest.json"} {
				mustf(t, fileMode(t, filepath.Join(dir, f)) == 0o600, "%s is %v", f, fileMode(t, filepath.Join(dir, f)))
			}
			_, err := os.Stat(filepath.Join(dir, "broken.manifest.json"))
			mustf(t, os.IsNotExist(err), "a manifest for the broken server: %v", err)
			raw, _ := os.ReadFile(o.config)
			var doc struct {
				Database string `json:"database"`
				Servers  []struct {
					Name     string            `json:"name"`
					Manifest string            `json:"manifest"`
					Env      map[string]string `json:"env"`
				} `json:"servers"`
			}
			mustf(t, json.Unmarshal(raw, &doc) == nil, "config %s", raw)
			mustf(t, doc.Database == "runs.db" && len(doc.Servers) == 2, "config %s", raw)
			for _, s := range doc.Servers {
				mustf(t, s.Manifest == s.Name+".manifest.json", "manifest path %q", s.Manifest)
			}
			moved := false
			for _, s := range doc.Servers {
				moved = moved || s.Name == "everything" && s.Env["EVERYTHING_TOKEN"] == everythingSecret
			}
			mustf(t, moved, "the secret did not move: %s", raw)
			mustf(t, !strings.Contains(string(raw), brokenSecret), "the left-out server's secret was written")

			// Every rule is a suggestion: nothing is served, and the
			// refusal names the tools.
			code, _, errs = o.run(t, "", "-config", o.config)
			mustf(t, code == 1 && strings.Contains(errs, "fs.read_text_file") && strings.Contains(errs, "every rule is still a suggestion") &&
				strings.Contains(errs, "agentrt-proxy review -config"), "serve with suggestions: %d\n%s", code, errs)

			if host == "claude-desktop" {
				o.reviewByAnswers(t)
			} else {
				code, out, errs = o.run(t, "", "review", "-config", o.config, "-accept-read-only")
				mustf(t, code == 0 && strings.Contains(out, "read_only suggestion(s), and only those") && strings.Contains(out, "fs.read_text_file (read_only)") &&
					strings.Contains(out, "suggestion(s) left, not offered until reviewed: ") && strings.Contains(out, "fs.create_directory"), "review -accept-read-only: %d\n%s\n%s", code, out, errs)
				mustf(t, !strings.Contains(out, "fs.write_file (") && !strings.Contains(out, "fs.edit_file ("), "accepted more than read_only:\n%s", out)
			}

			code, out, errs = o.run(t, "", "check", "-config", o.config)
			mustf(t, code == 0 && strings.Contains(out, "registered read_text_file as fs_read_text_file (read_only)") &&
				strings.Contains(out, "suggested fs.create_directory: remote_mutation"), "check: %d\n%s\n%s", code, out, errs)

			o.hostReaches(t)

			// The backup restores the original byte for byte.
			code, out, errs = o.run(t, "", "restore-host-config", "-from", host)
			mustf(t, code == 0 && strings.Contains(out, "restored"), "restore: %d\n%s\n%s", code, out, errs)
			got, _ := os.ReadFile(o.hostFile)
			mustf(t, string(got) == o.original, "restored:\n%s\nwant:\n%s", got, o.original)
			mustf(t, fileMode(t, o.hostFile) == 0o644, "the host file's mode became %v", fileMode(t, o.hostFile))
			backups, _ := filepath.Glob(o.hostFile + ".agentrt-proxy-backup-*")
			mustf(t, len(backups) == 1 && fileMode(t, backups[0]) == 0o600, "backups %v", backups)
		})
	}
}

// reviewByAnswers pipes an operator's answers into review: a stray word
// (answered with the help), then per suggestion: accept the read-only
// ones, reclassify write_file as local_mutation (against its hints),
// deny a parameter of list_directory_with_sizes, drop edit_file, skip the
// rest.
func (o *onboard) reviewByAnswers(t *testing.T) {
	t.Helper()
	cfg, err := LoadConfig(o.config)
	mustf(t, err == nil, "load: %v", err)
	answers := []string{"frobnicate"}
	for _, s := range cfg.Suggested() {
		switch {
		case s.Server == "fs" && s.Tool == "write_file":
			answers = append(answers, "c local_mutation")
		case s.Server == "fs" && s.Tool == "edit_file":
			answers = append(answers, "x")
		case s.Server == "fs" && s.Tool == "list_directory_with_sizes":
			answers = append(answers, "d nosuch", "d sortBy", "a")
		case s.Class == "read_only":
			answers = append(answers, "a")
		default:
			answers = append(answers, "s")
		}
	}
	code, out, errs := o.run(t, strings.Join(answers, "\n")+"\n", "review", "-config", o.config)
	mustf(t, code == 0, "review: %d\n%s\n%s", code, out, errs)
	mustf(t, strings.Contains(out, "server fs, tool write_file") && strings.Contains(out, "parameters: content string (required), path string (required)") &&
		strings.Contains(out, "hints: claims readOnly=false destructive=true"), "review showed:\n%s", out)
	mustf(t, strings.Contains(out, "a          accept the suggestion") && strings.Contains(out, `"nosuch" is not one of its parameters`), "review's help:\n%s", out)
	mustf(t, strings.Contains(out, "fs.write_file (local_mutation, against the hints)") && strings.Contains(out, "fs.list_directory_with_sizes (read_only, denying sortBy)") &&
		strings.Contains(out, "dropped 1 tool(s), never offered: fs.edit_file"), "review summary:\n%s", out)

	cfg, err = LoadConfig(o.config)
	mustf(t, err == nil, "load after review: %v", err)
	var fs ServerConfig
	for _, s := range cfg.Servers {
		if s.Name == "fs" {
			fs = s
		}
	}
	w := fs.Rules["write_file"]
	mustf(t, w.SideEffect == "local_mutation" && w.Suggestion == "" && w.AllowHintMismatch, "write_file %+v", w)
	_, kept := fs.Rules["edit_file"]
	mustf(t, !kept, "edit_file was not dropped")
	mustf(t, strings.Join(fs.Rules["list_directory_with_sizes"].Deny, ",") == "sortBy", "deny %+v", fs.Rules["list_directory_with_sizes"])
	mustf(t, fs.Rules["create_directory"].Suggestion != "", "a skipped suggestion became a rule")
}

// hostReaches starts agentrt-proxy from the rewritten host file, as the
// host would, with the go-sdk client: the reviewed tools are there and
// answer; the unreviewed and dropped ones are not offered.
func (o *onboard) hostReaches(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(o.hostFile)
	mustf(t, err == nil, "%v", err)
	key := "mcpServers"
	if o.host == "vscode" {
		key = "servers"
	}
	// The file is JSONC for VS Code (the fixture's comment stays), so read
	// the spliced object itself: the top-level key, indented by two.
	top := "\n  \"" + key + "\""
	i := bytes.Index(b, []byte(top)) + 1
	mustf(t, i > 0 && string(b[:i]) == o.original[:strings.Index(o.original, top)+1], "the bytes before the servers key changed:\n%s", b)
	dec := json.NewDecoder(bytes.NewReader(b[i:]))
	var k string
	mustf(t, dec.Decode(&k) == nil, "key")
	rest := bytes.TrimLeft(b[i+int(dec.InputOffset()):], " :")
	var servers map[string]struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	mustf(t, json.NewDecoder(bytes.NewReader(rest)).Decode(&servers) == nil, "servers in %s", b)
	mustf(t, len(servers) == 1, "the host still starts %d servers: %s", len(servers), b)
	e := servers["gated"]
	mustf(t, e.Command == o.proxyBin && len(e.Args) == 2 && e.Args[0] == "-config" && e.Args[1] == o.config, "entry %+v", e)
	mustf(t, (e.Type == "stdio") == (o.host == "vscode"), "entry type %q", e.Type)

	cmd := exec.Command(e.Command, e.Args...)
	cmd.Env = append(os.Environ(), "HOME="+o.home)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: o.host, Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	mustf(t, err == nil, "connect: %v\n%s", err, stderr)
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	mustf(t, err == nil, "list: %v", err)
	offered := map[string]bool{}
	for _, tl := range tools.Tools {
		offered[tl.Name] = true
	}
	mustf(t, offered["fs_read_text_file"] && offered["everything_echo"] && offered["gate_status"], "offered %v", offered)
	mustf(t, !offered["fs_create_directory"] && !offered["fs_edit_file"] && !offered["everything_toggle-simulated-logging"], "an unreviewed tool is offered: %v", offered)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fs_read_text_file",
		Arguments: json.RawMessage(fmt.Sprintf(`{"path":%q}`, filepath.Join(o.sandbox, "notes.txt")))})
	mustf(t, err == nil && !res.IsError && strings.Contains(text(res), "hello from the sandbox"), "read: %v %+v", err, res)
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "everything_echo", Arguments: json.RawMessage(`{"message":"through the proxy"}`)})
	mustf(t, err == nil && !res.IsError && strings.Contains(text(res), "through the proxy"), "echo: %v %+v", err, res)
	mustf(t, !strings.Contains(stderr.String(), everythingSecret), "the proxy's stderr holds the secret")
}

// A server that fails to start is reported with its stderr tail and left
// out; with no server left nothing is written, the host's file included.
func TestOnboard_ServerThatFailsToStartIsReportedNotAdded(t *testing.T) {
	proxyBin, _ := binaries(t)
	base := t.TempDir()
	o := &onboard{host: "cursor", home: filepath.Join(base, "home"), work: base, config: filepath.Join(base, "agentrt", "proxy.json"), proxyBin: proxyBin}
	o.hostFile = filepath.Join(o.home, ".cursor", "mcp.json")
	o.original = `{"mcpServers": {"broken": {"command": "sh", "args": ["-c", "echo \"cannot start: token $BROKEN_TOKEN\" >&2; exit 3"], "env": {"BROKEN_TOKEN": "` + brokenSecret + `"}}}}`
	if err := os.MkdirAll(filepath.Dir(o.hostFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, o.hostFile, o.original)
	code, out, errs := o.run(t, "", "init", "-from", "cursor", "-config", o.config, "-write-host-config")
	mustf(t, code == 1 && strings.Contains(errs, "server broken left out: it did not start") && strings.Contains(errs, `stderr: "cannot start: token [redacted]`) &&
		strings.Contains(errs, "no server was pinned; nothing written"), "init: %d\n%s\n%s", code, out, errs)
	_, err := os.Stat(filepath.Dir(o.config))
	if err == nil {
		entries, _ := os.ReadDir(filepath.Dir(o.config))
		mustf(t, len(entries) == 0, "init wrote %v", entries)
	}
	got, _ := os.ReadFile(o.hostFile)
	mustf(t, string(got) == o.original, "the host file changed: %s", got)
	backups, _ := filepath.Glob(o.hostFile + ".agentrt-proxy-backup-*")
	mustf(t, len(backups) == 0, "a backup of a file never rewritten: %v", backups)
}
