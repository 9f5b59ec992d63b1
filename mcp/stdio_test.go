package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// The server starts a grandchild that holds the server's stderr open and
// would outlive a server killed alone. Close kills the whole group: the
// stderr pipe closes (every holder is gone) and the grandchild is dead.
func TestStdio_CloseKillsTheServersDescendants(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no process groups on Windows")
	}
	srv := selfServer(t, "grandparent")
	m := pin(t, srv)
	_, rep, err := Load(context.Background(), srv, m, Rules{"echo": {SideEffect: agentrt.ReadOnly}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	c := rep.Connection
	c.Close()
	select {
	case <-c.proc.stderrDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's stderr is still held open after Close: a descendant outlived it")
	}
	match := regexp.MustCompile(`grandchild pid (\d+)`).FindStringSubmatch(c.proc.tail.String())
	if match == nil {
		t.Fatalf("the server never named its grandchild; stderr: %q", c.proc.tail.String())
	}
	pid, _ := strconv.Atoi(match[1])
	if runtime.GOOS == "linux" {
		// A dying process closes its files before the kernel marks it a
		// zombie, so the closed stderr can be seen a moment before /proc
		// says Z: wait for the state, with a deadline, rather than race it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			stat, err := os.ReadFile(filepath.Join("/proc", match[1], "stat"))
			if err != nil {
				break // reaped: gone
			}
			fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X") {
				break
			}
			must(t, time.Now().Before(deadline), "grandchild %d is alive 10 s after Close: %s", pid, stat)
			time.Sleep(10 * time.Millisecond)
		}
	}
	c.Close() // idempotent
}

// The real everything server reports its environment: it holds PATH, HOME,
// what the operator named, and nothing else of this process's.
func TestStdio_ServerGetsOnlyTheEnvironmentItIsGiven(t *testing.T) {
	t.Setenv("AGENTRT_TEST_SECRET", "do-not-leak")
	t.Setenv("AGENTRT_TEST_SHARED", "shared-value")
	srv := everythingServer(t)
	srv.InheritEnv = []string{"AGENTRT_TEST_SHARED"}
	srv.Env = []string{"AGENTRT_TEST_GIVEN=given"}
	m := pin(t, srv)
	tools, _ := load(t, srv, m, Rules{"get-env": {SideEffect: agentrt.ReadOnly}})
	res, err := tools[0].Call(context.Background(), agentrt.ToolCall{})
	must(t, err == nil, "get-env: %v", err)
	var text string
	_ = json.Unmarshal(res.Content, &text)
	must(t, !strings.Contains(text, "do-not-leak"), "the server saw a variable it was not given: %s", text)
	must(t, strings.Contains(text, "shared-value") && strings.Contains(text, "given"), "the server lacks what it was given: %s", text)
	must(t, strings.Contains(text, `"PATH"`), "the server has no PATH: %s", text)
}

func TestChildEnv_IsMinimalAndExplicit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the Windows base set differs")
	}
	parent := map[string]string{"PATH": "/bin", "HOME": "/h", "AWS_SECRET_ACCESS_KEY": "k", "HTTPS_PROXY": "p", "LANG": "C"}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	got := childEnv(lookup, []string{"LANG", "UNSET"}, []string{"HOME=/other", "X=1"})
	want := []string{"PATH=/bin", "HOME=/other", "LANG=C", "X=1"}
	must(t, strings.Join(got, " ") == strings.Join(want, " "), "childEnv = %q, want %q", got, want)
}

func TestServer_RejectsMalformedEnv(t *testing.T) {
	for _, s := range []Server{
		{Name: "a", Command: []string{"x"}, Env: []string{"NOEQUALS"}},
		{Name: "a", Command: []string{"x"}, Env: []string{"=v"}},
		{Name: "a", Command: []string{"x"}, InheritEnv: []string{"A=B"}},
		{Name: "a b", Command: []string{"x"}},
		{Name: "a", Command: []string{"x"}, Endpoint: "http://h"},
		{Name: "a", Endpoint: "ftp://h"},
	} {
		_, err := Pin(context.Background(), s)
		must(t, errors.Is(err, ErrInvalidServer), "%+v: %v", s, err)
	}
}

// A server that dies while listing leaves its last words in the error.
func TestStdio_StderrTailIsInAFailedListing(t *testing.T) {
	_, err := Pin(context.Background(), selfServer(t, "die-on-list"))
	must(t, err != nil && strings.Contains(err.Error(), "list tools") && strings.Contains(err.Error(), "listing is broken"), "Pin: %v", err)
}

// pinTimesOut pins srv with a short ConnectTimeout and wants
// ErrConnectTimeout; a minute bounds the test itself.
func pinTimesOut(t *testing.T, srv Server) {
	t.Helper()
	srv.ConnectTimeout = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() { _, err := Pin(context.Background(), srv); done <- err }()
	select {
	case err := <-done:
		must(t, errors.Is(err, ErrConnectTimeout), "Pin: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Pin did not return")
	}
}

// A server that never answers initialize is bounded by ConnectTimeout and
// the error says so; the test's own deadline bounds the test.
func TestServer_ConnectTimeoutBoundsAnInitializeThatNeverAnswers(t *testing.T) {
	srv := rawServer("slow", func(method string, _ json.RawMessage) (string, bool) {
		if method == "initialize" {
			return "hang", false
		}
		return "", false
	})
	pinTimesOut(t, srv)
}

// A listing that never ends (page after page, never answered, or a cursor
// loop) is bounded too.
func TestServer_ConnectTimeoutBoundsAListingThatNeverAnswers(t *testing.T) {
	srv := rawServer("slow", func(method string, _ json.RawMessage) (string, bool) { return "", false })
	pinTimesOut(t, srv)
}

// The npm servers the tests and examples/mcp run are pinned by exact
// version in package.json and by integrity in the lock file, installed
// from it, and started with node and the entry point, never npx.
func TestServer_RunsThePinnedPackageWithNode(t *testing.T) {
	dir := serversDir(t)
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		LockfileVersion int `json:"lockfileVersion"`
		Packages        map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
			Resolved  string `json:"resolved"`
		} `json:"packages"`
	}
	readJSON := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	readJSON("package.json", &pkg)
	readJSON("package-lock.json", &lock)
	exact := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	for _, name := range []string{"@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-everything"} {
		v := pkg.Dependencies[name]
		must(t, exact.MatchString(v), "%s is pinned as %q, not an exact version", name, v)
		locked := lock.Packages["node_modules/"+name]
		must(t, locked.Version == v, "the lock holds %s@%s, package.json %s", name, locked.Version, v)
		must(t, strings.HasPrefix(locked.Integrity, "sha512-"), "%s has no integrity in the lock: %q", name, locked.Integrity)
		var installed struct{ Version string }
		readJSONAt := filepath.Join("node_modules", name, "package.json")
		npmEntry(t, strings.TrimPrefix(name, "@modelcontextprotocol/"))
		readJSON(readJSONAt, &installed)
		must(t, installed.Version == v, "installed %s@%s, pinned %s: run `make mcp-servers`", name, installed.Version, v)
	}
	for path, p := range lock.Packages {
		if path == "" {
			continue
		}
		must(t, strings.HasPrefix(p.Integrity, "sha512-"), "%s is locked without integrity", path)
		must(t, p.Resolved == "" || strings.HasPrefix(p.Resolved, "https://registry.npmjs.org/"), "%s is locked from %q", path, p.Resolved)
	}
	for _, srv := range []Server{filesystemServer(t, t.TempDir()), everythingServer(t)} {
		must(t, srv.Command[0] == "node" && strings.HasSuffix(srv.Command[1], filepath.Join("dist", "index.js")), "%s runs %q", srv.Name, srv.Command)
		for _, a := range srv.Command {
			must(t, !strings.Contains(a, "npx"), "%s runs npx: %q", srv.Name, srv.Command)
		}
		m := pin(t, srv)
		must(t, len(m.Tools) > 0, "%s pinned nothing", srv.Name)
	}
}
