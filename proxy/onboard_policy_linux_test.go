//go:build linux

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests follow docs/proxy.md as a newcomer would, with the real
// agentrt-proxy binary and the real filesystem server: what init writes
// as the policy, what review and check say it does with each class, and
// what happens to the first write.

// newDesktopOnboard is a Claude Desktop fixture whose file holds only
// the servers given, built from the sandbox. Commands run in work, or in
// a new directory when work is "".
func newDesktopOnboard(t *testing.T, work string, servers func(sandbox string) map[string]any) *onboard {
	t.Helper()
	proxyBin, _ := binaries(t)
	base := t.TempDir()
	o := &onboard{host: "claude-desktop", home: filepath.Join(base, "home"), work: work, sandbox: filepath.Join(base, "sandbox"),
		config: filepath.Join(base, "agentrt", "proxy.json"), proxyBin: proxyBin}
	dirs := []string{o.home, o.sandbox}
	if o.work == "" {
		o.work = filepath.Join(base, "work")
		dirs = append(dirs, o.work)
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": servers(o.sandbox)}, "", "  ")
	o.hostFile = filepath.Join(o.home, ".config", "Claude", "claude_desktop_config.json")
	o.original = string(b) + "\n"
	if err := os.MkdirAll(filepath.Dir(o.hostFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, o.hostFile, o.original)
	return o
}

// fsOnly is a host file's one server: the pinned filesystem server on
// the sandbox, started with node.
func fsOnly(t *testing.T) func(string) map[string]any {
	entry := filesystemEntry(t)
	return func(sandbox string) map[string]any {
		return map[string]any{"fs": map[string]any{"command": "node", "args": []string{entry, sandbox}}}
	}
}

// The safety trap of issue 36: docs/proxy.md's four steps, exactly as it
// gives them, with review answered as its example does (`c
// local_mutation` for write_file). init writes a policy naming every
// class; review and check say that a local_mutation waits for approval;
// the host's first write through the real binary waits for an operator
// and the file is never written. Before init wrote a policy, the
// default let local_mutation run and the write ran at once.
func TestOnboard_FollowingTheDocTheFirstWriteWaitsForApproval(t *testing.T) {
	o := newDesktopOnboard(t, "", fsOnly(t))
	code, out, errs := o.run(t, "", "init", "-from", "claude-desktop", "-config", o.config, "-write-host-config")
	mustf(t, code == 0, "init: %d\n%s\n%s", code, out, errs)
	mustf(t, strings.Contains(out, "policy: what a tool of each class does") && strings.Contains(out, "  read_only: runs without approval\n") &&
		strings.Contains(out, "  local_mutation: waits for approval\n") && strings.Contains(out, "  remote_mutation: waits for approval\n") &&
		strings.Contains(out, "  destructive: denied\n"), "init does not say what each class does:\n%s", out)
	raw, err := os.ReadFile(o.config)
	mustf(t, err == nil, "%v", err)
	var doc struct {
		Policy map[string]string `json:"policy"`
	}
	mustf(t, json.Unmarshal(raw, &doc) == nil, "config %s", raw)
	want := map[string]string{"read_only": "allow", "local_mutation": "require_approval", "remote_mutation": "require_approval", "destructive": "deny"}
	mustf(t, fmt.Sprint(doc.Policy) == fmt.Sprint(want), "init wrote the policy %v, want %v", doc.Policy, want)

	o.reviewByAnswers(t)
	code, out, errs = o.run(t, "", "check", "-config", o.config)
	mustf(t, code == 0 && strings.Contains(out, "registered write_file as fs_write_file (local_mutation): waits for approval") &&
		strings.Contains(out, "registered read_text_file as fs_read_text_file (read_only): runs without approval"), "check: %d\n%s\n%s", code, out, errs)

	// The host starts the proxy from its rewritten file and writes.
	o.firstWriteWaits(t)
}

// firstWriteWaits starts the proxy as the host's rewritten file says and
// asks it to write a file: the proxy opens an approval for it (the line
// on its stderr) and the file is not there, while the call is held and
// after the proxy has stopped.
func (o *onboard) firstWriteWaits(t *testing.T) {
	t.Helper()
	cmd := exec.Command(o.proxyBin, "-config", o.config)
	cmd.Env = append(os.Environ(), "HOME="+o.home)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: o.host, Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	mustf(t, err == nil, "connect: %v\n%s", err, stderr)
	target := filepath.Join(o.sandbox, "written.txt")
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs_write_file",
			Arguments: json.RawMessage(fmt.Sprintf(`{"path":%q,"content":"unasked"}`, target))})
		done <- answer{res, err}
	}()
	var ran *answer
	waitFor(t, "the write's approval line, or its answer", func() bool {
		select {
		case a := <-done:
			ran = &a
			return true
		default:
		}
		return decideLine.MatchString(stderr.String())
	})
	_, statErr := os.Stat(target)
	if ran != nil {
		t.Fatalf("the first write answered without waiting for approval (%v, %s); the file exists: %v\nstderr:\n%s",
			ran.err, textOf(ran.res), statErr == nil, stderr)
	}
	m := decideLine.FindStringSubmatch(stderr.String())
	mustf(t, m[2] == "local_mutation" && m[3] == "fs_write_file", "the approval opened is %q", m[0])
	mustf(t, os.IsNotExist(statErr), "the file was written while the call waits: %v", statErr)
	cancel()
	cs.Close()
	_, statErr = os.Stat(target)
	mustf(t, os.IsNotExist(statErr), "the file was written: %v", statErr)
}

func textOf(res *sdk.CallToolResult) string {
	if res == nil {
		return "no result"
	}
	return text(res)
}

// init with the operator's -policy answers writes them, and review and
// check say what each class, and each tool, does under that policy, not
// under a default: here local_mutation runs unasked because the operator
// said so, and remote_mutation is denied.
func TestOnboard_ReviewAndCheckSayWhatThePolicyDoesWithEachClass(t *testing.T) {
	o := newDesktopOnboard(t, "", fsOnly(t))
	code, out, errs := o.run(t, "", "init", "-from", "claude-desktop", "-config", o.config,
		"-policy", "local_mutation=allow", "-policy", "remote_mutation=deny")
	mustf(t, code == 0 && strings.Contains(out, "  local_mutation: runs without approval\n") && strings.Contains(out, "  remote_mutation: denied\n"),
		"init: %d\n%s\n%s", code, out, errs)
	code, _, errs = o.run(t, "", "init", "-from", "claude-desktop", "-config", o.config+".2", "-policy", "local_mutation=maybe")
	mustf(t, code == 2 && strings.Contains(errs, `"maybe" is not allow, require_approval or deny`), "init -policy local_mutation=maybe: %d\n%s", code, errs)

	code, out, errs = o.run(t, "", "review", "-config", o.config,
		"-accept", "fs.write_file=local_mutation", "-accept", "fs.create_directory=remote_mutation", "-accept", "fs.read_text_file")
	mustf(t, code == 0, "review: %d\n%s\n%s", code, out, errs)
	for _, line := range []string{
		"  read_only: runs without approval\n", "  local_mutation: runs without approval\n",
		"  remote_mutation: denied\n", "  destructive: denied\n",
		"fs.write_file (local_mutation, against the hints): runs without approval\n",
		"fs.create_directory (remote_mutation): denied\n",
		"fs.read_text_file (read_only): runs without approval\n",
	} {
		mustf(t, strings.Contains(out, line), "review does not print %q:\n%s", line, out)
	}

	code, out, errs = o.run(t, "", "check", "-config", o.config)
	mustf(t, code == 0, "check: %d\n%s\n%s", code, out, errs)
	for _, line := range []string{
		"  local_mutation: runs without approval\n",
		"registered write_file as fs_write_file (local_mutation): runs without approval [hint mismatch allowed: ",
		"registered create_directory as fs_create_directory (remote_mutation): denied\n",
		"registered read_text_file as fs_read_text_file (read_only): runs without approval\n",
	} {
		mustf(t, strings.Contains(out, line), "check does not print %q:\n%s", line, out)
	}
}

// An npx entry whose package names no exact version gets one warning on
// stderr, and one that names a version gets none; init says which server
// it starts before the slow start. The entries run the real npx, which
// finds the package installed in mcp/testdata/servers (the directory init
// runs in) and fetches nothing.
func TestOnboard_InitWarnsAboutAnUnpinnedNpxEntry(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		t.Fatalf("npx is not on PATH: %v", err)
	}
	filesystemEntry(t) // fails with the install hint when the servers are missing
	_, file, _, _ := runtime.Caller(0)
	servers := filepath.Join(filepath.Dir(file), "..", "mcp", "testdata", "servers")
	o := newDesktopOnboard(t, servers, func(sandbox string) map[string]any {
		return map[string]any{
			"loose": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-filesystem", sandbox}},
			"exact": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-filesystem@2026.8.31", sandbox}},
		}
	})
	code, out, errs := o.run(t, "", "init", "-from", "claude-desktop", "-config", o.config)
	mustf(t, code == 0, "init: %d\n%s\n%s", code, out, errs)
	warn := "agentrt-proxy init: server loose runs npx with @modelcontextprotocol/server-filesystem, which names no exact version"
	mustf(t, strings.Count(errs, warn) == 1 && strings.Count(errs, "names no exact version") == 1, "init's stderr:\n%s", errs)
	for _, s := range []string{"loose", "exact"} {
		start := strings.Index(out, "server "+s+": starting it to list its tools...\n")
		pinned := strings.Index(out, "server "+s+": pinned 14 tool(s)")
		mustf(t, start >= 0 && pinned > start, "init does not announce %s before starting it:\n%s", s, out)
	}
}
