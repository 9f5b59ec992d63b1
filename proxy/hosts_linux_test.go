//go:build linux

package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// pendingIn lists the pending approvals in a runs database, of kind or,
// when kind is "", of every kind.
func pendingIn(t *testing.T, db, kind string) []agentrt.Approval {
	t.Helper()
	st := readStore(t, db)
	defer st.Close()
	return pendingOf(t, st, kind)
}

// onlyPendingIn is the one pending approval in a runs database.
func onlyPendingIn(t *testing.T, db string) agentrt.Approval {
	t.Helper()
	out := pendingIn(t, db, "")
	if len(out) != 1 {
		t.Fatalf("%d approvals pending, want 1: %+v", len(out), out)
	}
	return out[0]
}

// toolResult is an MCP CallToolResult as a host prints it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// runHost runs one host command and returns its exit code and stdout.
func runHost(t *testing.T, env []string, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return 0, out.String(), errb.String()
}

// result parses a host's JSON output of tools/call.
func result(t *testing.T, what, out string) toolResult {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s: not a tool result (%v):\n%s", what, err, out)
	}
	return r
}

// The MCP Inspector's CLI, a Node host, starts agentrt-proxy over stdio
// once per command, all on one database: it lists the tools, reads a
// file, is told PENDING_APPROVAL for a write that does not run, and after
// agentrt approve its identical call collects the approval and the file
// is written once; the next identical call is DUPLICATE. Each exit code is
// the Inspector's: 0 for a result, 5 for a result with isError.
func TestHosts_InspectorCLI(t *testing.T) {
	node := node22(t)
	inspector := hostTool(t, "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
	s := newProcSetup(t)
	env := []string{"HOME=" + t.TempDir()}
	cli := func(args ...string) (int, string) {
		code, out, errb := runHost(t, env, node, append([]string{inspector, "--cli", s.proxyBin, "-config", s.config}, args...)...)
		if code != 0 && code != 5 {
			t.Fatalf("inspector %v: exit %d\n%s\n%s", args, code, out, errb)
		}
		return code, out
	}
	code, out := cli("--method", "tools/list")
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	mustf(t, code == 0 && json.Unmarshal([]byte(out), &list) == nil, "tools/list: exit %d\n%s", code, out)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	mustf(t, strings.Join(names, ",") == "fs_list_directory,fs_read_text_file,fs_write_file,gate_status", "tools: %v", names)

	code, out = cli("--method", "tools/call", "--tool-name", "fs_read_text_file", "--tool-arg", "path="+filepath.Join(s.sandbox, "notes.txt"))
	r := result(t, "read", out)
	mustf(t, code == 0 && !r.IsError && strings.Contains(r.text(), "hello from the sandbox"), "read: exit %d %+v", code, r)

	target := filepath.Join(s.sandbox, "out.txt")
	write := []string{"--method", "tools/call", "--tool-name", "fs_write_file", "--tool-arg", "path=" + target, "content=written once"}
	code, out = cli(write...)
	r = result(t, "write", out)
	mustf(t, code == 0 && !r.IsError && strings.HasPrefix(r.text(), string(StatusPendingApproval)+":"), "write: exit %d %+v", code, r)
	_, err := os.Stat(target)
	mustf(t, os.IsNotExist(err), "the write ran before approval: %v", err)

	a := onlyPendingIn(t, s.db)
	out = s.agentrt(t, "approve", a.RunID, "-approval", a.ID)
	mustf(t, strings.Contains(out, "approved"), "agentrt approve: %s", out)

	code, out = cli(write...)
	r = result(t, "collect", out)
	mustf(t, code == 0 && !r.IsError && !startsWithStatus(r.text()), "collect: exit %d %+v", code, r)
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == "written once", "file: %q %v", b, err)

	code, out = cli(write...)
	r = result(t, "repeat", out)
	mustf(t, code == 5 && r.IsError && strings.HasPrefix(r.text(), string(StatusDuplicate)+":"), "repeat: exit %d %+v", code, r)
	mustf(t, s.toolStarts(t) == 1, "the write started %d times", s.toolStarts(t))
}

// proxyProcs are the running processes of the proxy binary.
func proxyProcs(bin string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			out = append(out, e.Name())
		}
	}
	return out
}

// mcpc, a Node host whose session outlives each command, keeps one
// agentrt-proxy process across several commands (its bridge holds the
// stdio session): the same flow as the Inspector's, asserted on mcpc's
// JSON output and exit codes (0 for every answered call, isError in the
// result), with one proxy process throughout and none after close.
func TestHosts_Mcpc(t *testing.T) {
	node := node22(t)
	mcpc := hostTool(t, "mcpc/node_modules/@apify/mcpc/bin/mcpc")
	s := newProcSetup(t)
	hosts := writeFile(t, filepath.Join(t.TempDir(), "mcp.json"),
		fmt.Sprintf(`{"mcpServers":{"gated":{"command":%q,"args":["-config",%q]}}}`, s.proxyBin, s.config))
	home := t.TempDir()
	env := []string{"HOME=" + home, "MCPC_HOME_DIR=" + filepath.Join(home, "mcpc"), "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH"), "NO_COLOR=1"}
	run := func(args ...string) string {
		t.Helper()
		code, out, errb := runHost(t, env, node, append([]string{mcpc}, args...)...)
		if code != 0 {
			t.Fatalf("mcpc %v: exit %d\n%s\n%s", args, code, out, errb)
		}
		return out
	}
	out := run("--json", "connect", hosts+":gated", "@gated")
	t.Cleanup(func() { _, _, _ = runHost(t, env, node, mcpc, "close", "@gated") })
	mustf(t, strings.Contains(out, `"gated-tools"`) && strings.Contains(out, "fs_write_file"), "connect: %s", out)
	procs := proxyProcs(s.proxyBin)
	mustf(t, len(procs) == 1, "proxy processes after connect: %v", procs)

	out = run("--json", "@gated", "tools-list")
	mustf(t, strings.Contains(out, "fs_read_text_file") && strings.Contains(out, "gate_status"), "tools-list: %s", out)
	r := result(t, "read", run("--json", "@gated", "tools-call", "fs_read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(s.sandbox, "notes.txt"))))
	mustf(t, !r.IsError && strings.Contains(r.text(), "hello from the sandbox"), "read: %+v", r)

	target := filepath.Join(s.sandbox, "out.txt")
	write := fmt.Sprintf(`{"path":%q,"content":"written once"}`, target)
	r = result(t, "write", run("--json", "@gated", "tools-call", "fs_write_file", write))
	mustf(t, !r.IsError && strings.HasPrefix(r.text(), string(StatusPendingApproval)+":"), "write: %+v", r)
	_, err := os.Stat(target)
	mustf(t, os.IsNotExist(err), "the write ran before approval: %v", err)

	a := onlyPendingIn(t, s.db)
	mustf(t, strings.Contains(s.agentrt(t, "approve", a.RunID, "-approval", a.ID), "approved"), "agentrt approve")
	r = result(t, "collect", run("--json", "@gated", "tools-call", "fs_write_file", write))
	mustf(t, !r.IsError && !startsWithStatus(r.text()), "collect: %+v", r)
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == "written once", "file: %q %v", b, err)
	r = result(t, "repeat", run("--json", "@gated", "tools-call", "fs_write_file", write))
	mustf(t, r.IsError && strings.HasPrefix(r.text(), string(StatusDuplicate)+":"), "repeat: %+v", r)
	mustf(t, s.toolStarts(t) == 1, "the write started %d times", s.toolStarts(t))
	now := proxyProcs(s.proxyBin)
	mustf(t, len(now) == 1 && now[0] == procs[0], "one proxy process for the session: %v then %v", procs, now)

	run("close", "@gated")
	waitFor(t, "the proxy to exit after close", func() bool { return len(proxyProcs(s.proxyBin)) == 0 })
}
