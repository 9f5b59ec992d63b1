package agentrt_test

import (
	"bufio"
	"go/version"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// workUses reads the directories go.work ties together, in order.
func workUses(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("go.work")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	inUse := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "use (":
			inUse = true
		case inUse && line == ")":
			inUse = false
		case inUse && line != "":
			dirs = append(dirs, line)
		case strings.HasPrefix(line, "use "):
			dirs = append(dirs, strings.TrimSpace(strings.TrimPrefix(line, "use ")))
		}
	}
	return dirs
}

// toolchainLine returns the argument of a go.mod or go.work file's
// toolchain directive, or "" when it has none.
func toolchainLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "toolchain" {
			return f[1]
		}
	}
	return ""
}

// pinnedToolchain is the Go release every build, test, scan and release
// binary uses: the oldest one govulncheck finds no called standard-library
// vulnerability in (SECURITY.md, "The supply chain").
const pinnedToolchain = "go1.27.3"

// Every module go.work ties, and go.work itself, names the pinned toolchain,
// so a build in the workspace and a build of one module alone (GOWORK=off)
// both run on it. A new nested module without the line fails here.
func TestSupply_EveryModuleNamesThePinnedToolchain(t *testing.T) {
	if got := toolchainLine(t, "go.work"); got != pinnedToolchain {
		t.Errorf("go.work: toolchain %q, want %q", got, pinnedToolchain)
	}
	uses := workUses(t)
	if len(uses) < 2 {
		t.Fatalf("go.work uses %q: want the core and its nested modules", uses)
	}
	for _, dir := range uses {
		mod := filepath.Join(dir, "go.mod")
		if got := toolchainLine(t, mod); got != pinnedToolchain {
			t.Errorf("%s: toolchain %q, want the line \"toolchain %s\"", mod, got, pinnedToolchain)
		}
	}
}

// The tests themselves run on the pinned toolchain or a later one: the
// Makefile and .ci/run set GOTOOLCHAIN=auto, so a machine whose own go is
// older (or whose go.env says local) still fetches and uses the pinned one.
func TestSupply_TestsRunOnThePinnedToolchainOrLater(t *testing.T) {
	if v := runtime.Version(); version.Compare(v, pinnedToolchain) < 0 {
		t.Fatalf("running on %s, older than the pinned %s: run through make, or export GOTOOLCHAIN=auto", v, pinnedToolchain)
	}
}
