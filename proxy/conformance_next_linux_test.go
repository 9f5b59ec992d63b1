//go:build linux

package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The official MCP conformance suite 0.2.0-alpha.12 (testdata/hosts/
// conformance-next) runs the server scenarios MCP 2026-07-28 requires,
// at that revision's wire, against the real agentrt-proxy in front of the
// go-sdk's conformance server: once through the loopback HTTP front, once
// through stdio (the suite speaks only HTTP, so a relay of the test's
// own carries each request to the proxy's stdin and its answer back). A
// scenario passes when none of its checks fails and at least one
// succeeded: one the suite scores as passed while it skipped every check
// is not counted. Every failure must be listed, with its reason, in
// testdata/conformance/expected-failures-2026-<transport>, and every
// listed scenario must still fail: the lists only shrink.
func TestConformance_ServerScenarios2026(t *testing.T) {
	t.Run("http", func(t *testing.T) { conformance2026(t, "http", "expected-failures-2026-http") })
	t.Run("stdio", func(t *testing.T) { conformance2026(t, "stdio", "expected-failures-2026-stdio") })
}

// conformanceTools2026 are the conformance server's tools the
// 2026-07-28 scenarios call besides conformanceTools, offered the same
// way.
var conformanceTools2026 = []string{"test_input_required_result_capabilities", "test_input_required_result_elicitation",
	"test_input_required_result_list_roots", "test_input_required_result_multi_round", "test_input_required_result_multiple_inputs",
	"test_input_required_result_request_state", "test_input_required_result_sampling",
	"test_input_required_result_tampered_state", "test_missing_capability", "test_x_mcp_header"}

func conformance2026(t *testing.T, transport, list string) {
	node := node22(t)
	suite := hostTool(t, "conformance-next/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	proxyBin, _ := binaries(t)
	rules := map[string]any{}
	for _, name := range append(slices.Clone(conformanceTools), conformanceTools2026...) {
		rules[name] = map[string]any{"side_effect": "read_only", "rename": name}
	}
	entry := map[string]any{"name": "cf", "command": []string{conformanceServer(t)},
		"manifest": "cf.manifest.json", "default_timeout": "30s", "rules": rules}
	config := proxyConfig(t, proxyBin, entry, nil)
	var url string
	var stderr *syncBuffer
	if transport == "http" {
		var front, token string
		front, token, stderr = startFront(t, proxyBin, config)
		url = tokenRelay(t, front, token)
	} else {
		url, stderr = stdioRelay(t, proxyBin, config)
	}
	out := t.TempDir()
	start := time.Now()
	cmd := exec.Command(node, suite, "server", "--url", url, "--requirements", "2026-07-28", "-o", out)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	b, _ := cmd.CombinedOutput() // its exit code reflects failures; the results decide
	t.Logf("conformance suite (2026-07-28, %s) ran in %s", transport, time.Since(start).Round(time.Second))
	results := readConformance(t, out, b, stderr)
	retryTimedOut(t, results, func(scenario, out string) *exec.Cmd {
		return exec.Command(node, suite, "server", "--url", url, "--requirements", "2026-07-28", "--scenario", scenario, "-o", out)
	})
	required := requiredServerScenarios(t, node, suite)
	for n := range results {
		if !required[n] {
			// The suite runs the extension (tasks) and pending scenarios
			// too, but 2026-07-28 requires none of them.
			t.Logf("not required by 2026-07-28, not scored: %s", n)
			delete(results, n)
		}
	}
	mustf(t, len(results) > 0, "the suite ran none of the %d required scenarios", len(required))
	scoreStrict(t, results, list)
	if t.Failed() {
		t.Logf("suite output:\n%s\nproxy stderr:\n%s", b, stderr)
	}
}

// requiredServerScenarios are the server scenarios the suite says MCP
// 2026-07-28 requires (`list --server --requirements 2026-07-28`), without
// those it runs but never scores.
func requiredServerScenarios(t *testing.T, node, suite string) map[string]bool {
	t.Helper()
	out, err := exec.Command(node, suite, "list", "--server", "--requirements", "2026-07-28").Output()
	if err != nil {
		t.Fatalf("conformance list --requirements: %v", err)
	}
	section, _, _ := strings.Cut(string(out), "Client scenarios")
	_, section, _ = strings.Cut(section, "Server scenarios")
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+- (\S+)\s*$`).FindAllStringSubmatch(section, -1) {
		names[m[1]] = true
	}
	if len(names) == 0 {
		t.Fatalf("conformance list named no required server scenario:\n%s", out)
	}
	return names
}

// readConformance reads each scenario's checks from the suite's output
// directory, by scenario name.
func readConformance(t *testing.T, out string, suiteOut []byte, stderr *syncBuffer) map[string][]check {
	t.Helper()
	results := map[string][]check{}
	dirs, err := os.ReadDir(out)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("the suite wrote no results (%v):\n%s\nproxy stderr:\n%s", err, suiteOut, stderr)
	}
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(out, d.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var cs []check
		if err := json.Unmarshal(raw, &cs); err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		results[stamp.ReplaceAllString(strings.TrimPrefix(d.Name(), "server-"), "")] = cs
	}
	return results
}

// scoreStrict holds results to the list: a scenario with a failed check,
// or with no check that succeeded, fails and must be listed; a listed one
// must fail.
func scoreStrict(t *testing.T, results map[string][]check, list string) {
	t.Helper()
	board := newScoreboard(t, list)
	for _, n := range slices.Sorted(maps.Keys(results)) {
		var why []string
		succeeded := 0
		for _, c := range results[n] {
			switch c.Status {
			case "FAILURE":
				why = append(why, fmt.Sprintf("%s: %s", c.ID, c.Error))
			case "SUCCESS":
				succeeded++
			}
		}
		if len(why) == 0 && succeeded == 0 {
			why = append(why, "no check succeeded (every one skipped or informational)")
		}
		board.score(n, why, "")
	}
	board.done("conformance")
}

// stdioRelay starts agentrt-proxy over stdio and serves its stateless
// revision over loopback HTTP for the suite: each POST's JSON-RPC message
// goes to the proxy's stdin as one line, and the answer with the same id
// comes back as the response body. Notifications are accepted with 202;
// what the proxy sends unasked is dropped.
func stdioRelay(t *testing.T, proxyBin, config string) (string, *syncBuffer) {
	t.Helper()
	stderr := &syncBuffer{}
	cmd := exec.Command(proxyBin, "-config", config)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waiting := map[string]chan []byte{}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			line := append([]byte(nil), sc.Bytes()...)
			if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 {
				continue
			}
			mu.Lock()
			ch := waiting[string(m.ID)]
			delete(waiting, string(m.ID))
			mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	var writeMu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &m) != nil {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		var ch chan []byte
		if len(m.ID) > 0 {
			ch = make(chan []byte, 1)
			mu.Lock()
			waiting[string(m.ID)] = ch
			mu.Unlock()
		}
		writeMu.Lock()
		_, werr := stdin.Write(append(bytes.TrimSpace(body), '\n'))
		writeMu.Unlock()
		if werr != nil {
			http.Error(w, werr.Error(), http.StatusBadGateway)
			return
		}
		if ch == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		select {
		case resp := <-ch:
			w.Header().Set("Content-Type", "application/json")
			w.Write(resp)
		case <-r.Context().Done():
		case <-time.After(60 * time.Second):
			http.Error(w, "no answer", http.StatusGatewayTimeout)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return "http://" + ln.Addr().String() + "/mcp", stderr
}
