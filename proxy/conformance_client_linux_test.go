//go:build linux

package proxy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// legacyClientScenarios are the suite's client scenarios of the revisions
// before 2026-07-28 and its extensions, as `list --client` tags them: all
// but those of 2026-07-28 alone.
func legacyClientScenarios(t *testing.T, node, suite string) []string {
	t.Helper()
	out, err := exec.Command(node, suite, "list", "--client").Output()
	if err != nil {
		t.Fatalf("conformance list --client: %v", err)
	}
	var names []string
	re := regexp.MustCompile(`(?m)^\s+- (\S+)(?: \[([^\]]*)\])?`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		if m[2] == "2026-07-28" {
			continue
		}
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --client named no scenario:\n%s", out)
	}
	return names
}

// requiredClientScenarios are the client scenarios a revision requires,
// and those the suite runs at it but never scores (the auth extensions),
// as `list --requirements` names them.
func requiredClientScenarios(t *testing.T, node, suite, revision string) (required, unscored []string) {
	t.Helper()
	out, err := exec.Command(node, suite, "list", "--client", "--requirements", revision).Output()
	if err != nil {
		t.Fatalf("conformance list --requirements %s: %v", revision, err)
	}
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Client scenarios"):
			section = "client"
		case strings.HasPrefix(line, "Server scenarios"):
			section = "server"
		case strings.HasPrefix(line, "Run and reported"):
			section = "unscored"
		case section == "client" && strings.HasPrefix(trimmed, "- "):
			required = append(required, strings.TrimPrefix(trimmed, "- "))
		case section == "unscored" && strings.HasPrefix(trimmed, "- ") && strings.HasSuffix(trimmed, " [client]"):
			unscored = append(unscored, strings.TrimSuffix(strings.TrimPrefix(trimmed, "- "), " [client]"))
		}
	}
	if len(required) == 0 {
		t.Fatalf("conformance list --requirements %s named no client scenario:\n%s", revision, out)
	}
	return required, unscored
}

// cfclient builds testdata/cfclient, the client the suite runs.
func cfclient(t *testing.T) string {
	t.Helper()
	return goBinary(t, "cfclient", "./testdata/cfclient")
}

// The official MCP conformance suite's client scenarios (0.2.0-alpha.12,
// those of the revisions before 2026-07-28 and the extensions) judge
// agentrt-proxy as a client: for each scenario the suite starts its server
// and runs testdata/cfclient, which writes a proxy configuration naming
// that server (an oauth entry for the auth scenarios), runs the real
// `agentrt-proxy login` with a scripted browser step, `pin`, then starts
// the proxy over stdio and, as a go-sdk host, calls the scenario's tool
// through it. A scenario fails when any of its checks fails or the client
// exits with an error. Every failure must be listed in
// testdata/conformance/expected-failures-client with its reason, and every
// listed scenario must still fail: the list only shrinks.
func TestConformance_ClientScenarios(t *testing.T) {
	node := node22(t)
	suite := hostTool(t, "conformance-next/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	runClientScenarios(t, node, suite, legacyClientScenarios(t, node, suite), nil, "expected-failures-client")
}

// The same, with the suite's 0.2.0-alpha.12 at the 2026-07-28 wire: every
// client scenario that revision requires, and the auth extensions it runs
// without scoring, each run with --spec-version 2026-07-28, so the
// scenario's server speaks that revision to the proxy's upstream client.
// Failures are listed in testdata/conformance/expected-failures-client-2026
// with their reasons; a required scenario may not be listed.
func TestConformance_ClientScenarios20260728(t *testing.T) {
	node := node22(t)
	suite := hostTool(t, "conformance-next/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	required, unscored := requiredClientScenarios(t, node, suite, "2026-07-28")
	for n, why := range expectedFailures(t, "expected-failures-client-2026") {
		if slices.Contains(required, n) {
			t.Errorf("%s is required at 2026-07-28 and may not be an expected failure (%s)", n, why)
		}
	}
	scenarios := append(required, unscored...)
	runClientScenarios(t, node, suite, scenarios, []string{"--spec-version", "2026-07-28", "--force"}, "expected-failures-client-2026")
}

// runClientScenarios runs each scenario with cfclient and holds the
// results to the expected-failures list.
func runClientScenarios(t *testing.T, node, suite string, scenarios, extra []string, list string) {
	proxyBin, _ := binaries(t)
	client := cfclient(t)
	board := newScoreboard(t, list)
	for _, sc := range scenarios {
		out := t.TempDir()
		args := append([]string{suite, "client", "--command", client, "--scenario", sc, "-o", out}, extra...)
		cmd := exec.Command(node, args...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "AGENTRT_PROXY_BIN="+proxyBin)
		b, _ := cmd.CombinedOutput() // the results and the exit line decide
		board.score(sc, scenarioFailures(t, out, string(b)), "\n"+string(b))
	}
	board.done("client conformance")
}

// scenarioFailures reads the checks a scenario wrote under dir: each
// failed check, a missing result, and a client that exited with an error.
func scenarioFailures(t *testing.T, dir, output string) []string {
	t.Helper()
	var why []string
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		found = true
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var cs []check
		if err := json.Unmarshal(raw, &cs); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, c := range cs {
			if c.Status == "FAILURE" {
				why = append(why, fmt.Sprintf("%s: %s", c.ID, c.Error))
			}
		}
		return nil
	})
	if !found {
		why = append(why, "the suite wrote no results")
	}
	if strings.Contains(output, "CLIENT EXITED WITH ERROR") {
		why = append(why, "the client exited with an error")
	}
	return why
}
