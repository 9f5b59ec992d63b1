//go:build linux

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// The process tests build the real binaries, start agentrt-proxy the way a
// host does (the official SDK client over stdio), put the real filesystem
// server from the mcp module's lock file behind it, and decide with the
// real agentrt.

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]error{} // by package: nil once it built
)

// goBinary builds the Go program pkg, as name in one directory, once per
// test process, and returns its path.
func goBinary(t testing.TB, name, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		d, err := os.MkdirTemp("", "agentrt-proxy-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, name)
	err, done := built[pkg]
	if !done {
		if b, berr := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build %s: %v\n%s", pkg, berr, b)
		}
		built[pkg] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// binaries builds agentrt-proxy and agentrt once per test process.
func binaries(t *testing.T) (proxyBin, agentrtBin string) {
	t.Helper()
	return goBinary(t, "agentrt-proxy", "./cmd/agentrt-proxy"), goBinary(t, "agentrt", "github.com/agentrt/agentrt/cmd/agentrt")
}

// filesystemEntry is the pinned filesystem server.
func filesystemEntry(t *testing.T) string { t.Helper(); return pinnedServer(t, "server-filesystem") }

// pinnedServer is the entry point of the pinned @modelcontextprotocol
// package name, run with node. A missing install fails, never skips.
func pinnedServer(t *testing.T, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	entry := filepath.Join(filepath.Dir(file), "..", "mcp", "testdata", "servers", "node_modules", "@modelcontextprotocol",
		name, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the pinned MCP server %s is not installed (%v): run `make mcp-servers` at the repository root, which runs npm ci --ignore-scripts in mcp/testdata/servers", name, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH; the pinned MCP servers run with node: %v", err)
	}
	return entry
}

// host is an MCP host running agentrt-proxy as its server.
type host struct {
	t      *testing.T
	cmd    *exec.Cmd
	cs     *sdk.ClientSession
	stderr *syncBuffer
}

type procSetup struct {
	dir, sandbox, config, db string
	proxyBin, agentrtBin     string
}

func newProcSetup(t *testing.T) *procSetup {
	proxyBin, agentrtBin := binaries(t)
	entry := filepath.Join(filesystemEntry(t))
	base := t.TempDir()
	s := &procSetup{dir: filepath.Join(base, "proxy"), sandbox: filepath.Join(base, "sandbox"), proxyBin: proxyBin, agentrtBin: agentrtBin}
	for _, d := range []string{s.dir, s.sandbox} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(s.sandbox, "notes.txt"), "hello from the sandbox\n")
	cfg := map[string]any{
		"database": "runs.db", "session": "desktop", "hold": "0s", "lease_ttl": "3s",
		"policy": map[string]any{"local_mutation": "require_approval"},
		"servers": []any{map[string]any{
			"name": "fs", "command": []string{"node", entry, s.sandbox}, "manifest": "fs.manifest.json",
			"connect_timeout": "30s", "default_timeout": "10s",
			"rules": map[string]any{
				"read_text_file": map[string]any{"side_effect": "read_only"},
				"list_directory": map[string]any{"side_effect": "read_only"},
				"write_file":     map[string]any{"side_effect": "local_mutation", "timeout": "120s", "allow_hint_mismatch": true},
			},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	s.config = writeFile(t, filepath.Join(s.dir, "proxy.json"), string(b))
	s.db = filepath.Join(s.dir, "runs.db")
	out, err := exec.Command(proxyBin, "pin", "-config", s.config).CombinedOutput()
	if err != nil {
		t.Fatalf("agentrt-proxy pin: %v\n%s", err, out)
	}
	return s
}

// start runs agentrt-proxy as a host would: the SDK's CommandTransport.
func (s *procSetup) start(t *testing.T) *host {
	t.Helper()
	h := &host{t: t, stderr: &syncBuffer{}}
	h.cmd = exec.Command(s.proxyBin, "-config", s.config)
	h.cmd.Stderr = h.stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-host", Version: "1"}, nil)
	return s.connect(t, h, client, nil)
}

// connect connects client to the proxy h's command runs, and ends both
// when the test does.
func (s *procSetup) connect(t *testing.T, h *host, client *sdk.Client, opts *sdk.ClientSessionOptions) *host {
	t.Helper()
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: h.cmd}, opts)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, h.stderr)
	}
	h.cs = cs
	t.Cleanup(func() {
		cs.Close()
		if h.cmd.Process != nil {
			h.cmd.Process.Kill()
		}
	})
	return h
}

func (h *host) call(tool, args string) (string, bool, error) {
	res, err := h.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		return "", false, err
	}
	return text(res), res.IsError, nil
}

func (h *host) expect(want Status, tool, args string) string {
	h.t.Helper()
	got, isErr, err := h.call(tool, args)
	if err != nil {
		h.t.Fatalf("call %s: %v\nstderr: %s", tool, err, h.stderr)
	}
	if want == "" {
		if isErr || startsWithStatus(got) {
			h.t.Fatalf("call %s %s: %q, want the server's result", tool, args, got)
		}
		return got
	}
	if !strings.HasPrefix(got, string(want)+":") {
		h.t.Fatalf("call %s %s: %q, want %s\nstderr: %s", tool, args, got, want, h.stderr)
	}
	return got
}

var decideLine = regexp.MustCompile(`approval (\S+) \((\S+)\) for (\S+) waits; decide with: agentrt -db "([^"]+)" approve (\S+) -approval (\S+)`)

// lastApproval is the last approval the proxy's stderr opened (run, id,
// kind), once at least n have been: stderr is copied from a pipe of its
// own, so it may arrive after the answer on stdout.
func (h *host) lastApproval(n int) (run, id, kind string) {
	h.t.Helper()
	var ms [][]string
	waitFor(h.t, "the approval line on stderr", func() bool {
		ms = decideLine.FindAllStringSubmatch(h.stderr.String(), -1)
		return len(ms) >= n
	})
	m := ms[len(ms)-1]
	return m[5], m[1], m[2]
}

// agentrt runs the real operator command.
func (s *procSetup) agentrt(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.agentrtBin, append([]string{"-db", s.db}, args...)...)
	cmd.Env = append(os.Environ(), "USER=operator")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agentrt %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// toolStarts counts the write tool starts the runs database records.
func (s *procSetup) toolStarts(t *testing.T) int {
	t.Helper()
	st := readStore(t, s.db)
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		evs, _ := st.ListEvents(context.Background(), r.ID)
		for _, e := range evs {
			if e.Type == agentrt.EventToolStarted && strings.Contains(string(e.Payload), "fs_write_file") {
				n++
			}
		}
	}
	return n
}

// The whole flow a desktop host sees: a read returns the file; a write
// waits for approval and writes nothing; agentrt approve decides; the
// host's identical call collects it and the file is written once; a
// repeat is DUPLICATE.
func TestProcess_HostDrivesTheRealBinaryAgainstTheFilesystemServer(t *testing.T) {
	s := newProcSetup(t)
	h := s.start(t)
	tools, err := h.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	mustf(t, strings.Join(names, ",") == "fs_list_directory,fs_read_text_file,fs_write_file,gate_status", "tools %v", names)

	got := h.expect("", "fs_read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(s.sandbox, "notes.txt")))
	mustf(t, strings.Contains(got, "hello from the sandbox"), "read: %q", got)

	target := filepath.Join(s.sandbox, "out.txt")
	write := fmt.Sprintf(`{"path":%q,"content":"written once"}`, target)
	h.expect(StatusPendingApproval, "fs_write_file", write)
	_, err = os.Stat(target)
	mustf(t, os.IsNotExist(err), "the write ran before approval: %v", err)

	run, id, _ := h.lastApproval(1)
	out := s.agentrt(t, "approve", run, "-approval", id)
	mustf(t, strings.Contains(out, "approved"), "agentrt approve: %s", out)

	h.expect("", "fs_write_file", write)
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == "written once", "file: %q %v", b, err)
	h.expect(StatusDuplicate, "fs_write_file", write)
	mustf(t, s.toolStarts(t) == 1, "write started %d times", s.toolStarts(t))
	status := h.expect(StatusGateStatus, "gate_status", `{}`)
	mustf(t, strings.Contains(status, "executed: succeeded"), "status: %s", status)
	for _, line := range strings.Split(h.stderr.String(), "\n") {
		mustf(t, line == "" || strings.HasPrefix(line, "agentrt-proxy: "), "stderr line %q", line)
	}
}

// children lists a process's child pids.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// killMidWrite starts the proxy, has the operator approve a write of
// "b" to target, stops the server so the write reaches it and is never
// answered, and kills the proxy (SIGKILL) while the write is in the
// server. The stopped server dies with the proxy; nothing is written.
func (s *procSetup) killMidWrite(t *testing.T) (target, write string) {
	t.Helper()
	h := s.start(t)
	target = filepath.Join(s.sandbox, "b.txt")
	write = fmt.Sprintf(`{"path":%q,"content":"b"}`, target)
	h.expect(StatusPendingApproval, "fs_write_file", write)
	run, id, _ := h.lastApproval(1)
	s.agentrt(t, "approve", run, "-approval", id)

	kids := children(h.cmd.Process.Pid)
	mustf(t, len(kids) == 1, "the proxy's children: %v", kids)
	if err := syscall.Kill(kids[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := h.call("fs_write_file", write)
		done <- err
	}()
	waitFor(t, "the write's tool start", func() bool { return s.toolStarts(t) == 1 })
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done // the host sees its connection end; the SDK reaps the process
	waitFor(t, "the stopped server to die with the proxy", func() bool { return syscall.Kill(kids[0], 0) != nil })
	_, err := os.Stat(target)
	mustf(t, os.IsNotExist(err), "the stopped server wrote: %v", err)
	return target, write
}

// SIGKILL of the proxy while an approved write is in the server leaves an
// unknown outcome: after a restart the identical call is IN_PROGRESS while
// the dead proxy's lease lasts, then UNKNOWN_OUTCOME; every other write is
// BLOCKED; nothing is written until an operator approves the re-run, which
// then writes the file once.
func TestProcess_KillMidWriteLeavesAnUnknownOutcome(t *testing.T) {
	s := newProcSetup(t)
	target, write := s.killMidWrite(t)

	h2 := s.start(t)
	// IN_PROGRESS while the dead proxy's lease lasts, then the takeover.
	deadline := time.Now().Add(30 * time.Second)
	for {
		txt, _, err := h2.call("fs_write_file", write)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(txt, string(StatusUnknownOutcome)+":") {
			break
		}
		mustf(t, strings.HasPrefix(txt, string(StatusInProgress)+":"), "after the restart: %q\nthe proxy's stderr:\n%s", txt, h2.stderr)
		mustf(t, time.Now().Before(deadline), "still in progress: %q", txt)
		time.Sleep(100 * time.Millisecond)
	}
	other := fmt.Sprintf(`{"path":%q,"content":"c"}`, filepath.Join(s.sandbox, "c.txt"))
	h2.expect(StatusBlocked, "fs_write_file", other)
	h2.expect(StatusUnknownOutcome, "fs_write_file", write)
	_, err := os.Stat(target)
	mustf(t, os.IsNotExist(err), "written before the operator decided: %v", err)

	run2, id2, kind := h2.lastApproval(1)
	mustf(t, kind == agentrt.InterruptedSideEffect, "kind %s", kind)
	show := s.agentrt(t, "show", run2)
	mustf(t, strings.Contains(show, "outcome unknown"), "show: %s", show)
	s.agentrt(t, "approve", run2, "-approval", id2)
	h2.expect("", "fs_write_file", write)
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == "b", "file %q %v", b, err)
	h2.expect(StatusDuplicate, "fs_write_file", write)
	h2.expect(StatusPendingApproval, "fs_write_file", other)
	mustf(t, s.toolStarts(t) == 2, "write started %d times: once cut off, once approved", s.toolStarts(t))
}

// waitFor polls cond until it holds, failing after a deadline: a
// condition with a deadline, never a fixed sleep.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An approval decided with the real agentrt while the host's call is held
// is collected by that call, without the host retrying.
func TestProcess_ApprovalDecidedWhileTheHostWaitsCompletesTheCall(t *testing.T) {
	s := newProcSetup(t)
	s.setConfig(t, "hold", "120s")
	h := s.start(t)
	target := filepath.Join(s.sandbox, "held.txt")
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		txt, _, err := h.call("fs_write_file", fmt.Sprintf(`{"path":%q,"content":"held"}`, target))
		done <- result{txt, err}
	}()
	run, id, _ := h.lastApproval(1)
	s.agentrt(t, "approve", run, "-approval", id)
	r := <-done
	mustf(t, r.err == nil && !startsWithStatus(r.text), "the held call: %q %v", r.text, r.err)
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == "held", "file %q %v", b, err)
}

// Two hosts, each with its own agentrt-proxy, on one database and session:
// an identical call from either collects the same approval, and the write
// runs once.
func TestProcess_TwoProxiesOnOneDatabaseShareTheIndex(t *testing.T) {
	s := newProcSetup(t)
	a, b := s.start(t), s.start(t)
	target := filepath.Join(s.sandbox, "shared.txt")
	write := fmt.Sprintf(`{"path":%q,"content":"once"}`, target)
	a.expect(StatusPendingApproval, "fs_write_file", write)
	b.expect(StatusPendingApproval, "fs_write_file", write)
	mustf(t, !decideLine.MatchString(b.stderr.String()), "the second proxy opened its own approval: %s", b.stderr)
	run, id, _ := a.lastApproval(1)
	s.agentrt(t, "approve", run, "-approval", id)

	type result struct {
		text string
		err  error
	}
	results := make(chan result, 2)
	for _, h := range []*host{a, b} {
		go func() {
			txt, _, err := h.call("fs_write_file", write)
			results <- result{txt, err}
		}()
	}
	ran := 0
	for range 2 {
		r := <-results
		mustf(t, r.err == nil, "call: %v", r.err)
		switch {
		case !startsWithStatus(r.text):
			ran++
		case strings.HasPrefix(r.text, string(StatusInProgress)+":"), strings.HasPrefix(r.text, string(StatusDuplicate)+":"):
		default:
			t.Fatalf("unexpected answer %q", r.text)
		}
	}
	mustf(t, ran == 1 && s.toolStarts(t) == 1, "ran %d times in answers, %d tool starts", ran, s.toolStarts(t))
	a.expect(StatusDuplicate, "fs_write_file", write)
	b.expect(StatusDuplicate, "fs_write_file", write)
	got, _ := os.ReadFile(target)
	mustf(t, string(got) == "once", "file %q", got)
}

// setConfig rewrites one field of the configuration.
func (s *procSetup) setConfig(t *testing.T, key string, value any) {
	t.Helper()
	s.editConfig(t, func(doc map[string]any) { doc[key] = value })
}

// editConfig rewrites the configuration as edit changes its JSON.
func (s *procSetup) editConfig(t *testing.T, edit func(doc map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	out, _ := json.MarshalIndent(doc, "", "  ")
	writeFile(t, s.config, string(out))
}

// pendingOfKind lists the pending approvals of kind in the runs database,
// as an operator's front end reads them.
func (s *procSetup) pendingOfKind(t *testing.T, kind string) []agentrt.Approval {
	t.Helper()
	return pendingIn(t, s.db, kind)
}

// SIGKILL of the proxy mid-write, then a restart: the interrupted write
// blocks the tool at once and the operator is asked then. The first call
// after the restart is a *different* write, and it is BLOCKED; the
// operator sees the approval about the interruption before the model
// repeats anything (it did not, before: the row became blocking only when
// the identical call came again, and a different write went on to ask or
// run).
func TestProcess_KillMidWriteBlocksOtherWritesAtOnce(t *testing.T) {
	s := newProcSetup(t)
	target, write := s.killMidWrite(t)

	// Restarted at once: the dead proxy's lease still runs. Nobody calls;
	// the approval appears when the lease lapses.
	h2 := s.start(t)
	waitFor(t, "the operator's approval about the interrupted write", func() bool {
		return len(s.pendingOfKind(t, agentrt.InterruptedSideEffect)) == 1
	})
	run2, id2, kind := h2.lastApproval(1)
	mustf(t, kind == agentrt.InterruptedSideEffect, "kind %s", kind)
	other := fmt.Sprintf(`{"path":%q,"content":"c"}`, filepath.Join(s.sandbox, "c.txt"))
	h2.expect(StatusBlocked, "fs_write_file", other)
	mustf(t, len(s.pendingOfKind(t, "local_mutation")) == 0, "the blocked write opened an approval")
	_, err := os.Stat(target)
	mustf(t, os.IsNotExist(err), "written before the operator decided: %v", err)

	// A restart after the lease lapsed finds the call on start: still
	// blocked, the same approval, no new one.
	h2.cs.Close()
	h3 := s.start(t)
	h3.expect(StatusBlocked, "fs_write_file", other)
	mustf(t, len(s.pendingOfKind(t, agentrt.InterruptedSideEffect)) == 1, "a second approval was opened")

	s.agentrt(t, "approve", run2, "-approval", id2)
	h3.expect("", "fs_write_file", write)
	b, err := os.ReadFile(target)
	mustf(t, err == nil && string(b) == "b", "file %q %v", b, err)
	h3.expect(StatusPendingApproval, "fs_write_file", other)
	mustf(t, s.toolStarts(t) == 2, "write started %d times: once cut off, once approved", s.toolStarts(t))
}
