package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePolicyProgram installs a stand-in agentrt-policy that prints its
// arguments and its stdin, and exits with the code in its first argument
// when that is "exit=N".
func fakePolicyProgram(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, policyProgram)
	script := "#!/bin/sh\necho \"args:$*\"\necho \"db:$AGENTRT_DB\"\ncat\necho err >&2\ncase \"$1\" in exit=*) exit \"${1#exit=}\";; esac\nexit 0\n"
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	old := findPolicyProgram
	findPolicyProgram = func() (string, error) { return p, nil }
	t.Cleanup(func() { findPolicyProgram = old })
}

// agentrt policy and agentrt recheck run agentrt-policy with the arguments
// as given (recheck also naming the global -db), pass stdin, stdout and
// stderr through, and exit with its exit code.
func TestPolicy_RunsAgentrtPolicyWithArgumentsAndStreams(t *testing.T) {
	fakePolicyProgram(t)
	r := (*fixture)(nil).runWith(t, func(*env) {}, strings.NewReader("from stdin\n"), "policy", "test", "p.yaml", "cases.yaml")
	if r.code != ExitOK || r.stdout != "args:test p.yaml cases.yaml\ndb:\nfrom stdin\n" || r.stderr != "err\n" {
		t.Fatalf("policy test: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = (*fixture)(nil).runWith(t, func(*env) {}, nil, "policy", "exit=1")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want agentrt-policy's 1", r.code)
	}
	r = (*fixture)(nil).runWith(t, func(*env) {}, nil, "policy", "exit=2")
	if r.code != ExitUsage {
		t.Fatalf("exit %d, want agentrt-policy's 2", r.code)
	}
	r = (*fixture)(nil).runWith(t, func(*env) {}, nil, "-db", "/runs.db", "recheck", "-policy", "p.yaml", "run-1")
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "args:recheck -db /runs.db -policy p.yaml run-1\n") {
		t.Fatalf("recheck: exit %d, stdout %q", r.code, r.stdout)
	}
	r = (*fixture)(nil).runWith(t, func(e *env) {
		e.getenv = func(k string) string {
			if k == dbEnv {
				return "/from/env.db"
			}
			return ""
		}
	}, nil, "recheck", "-policy", "p.yaml", "run-1")
	if !strings.Contains(r.stdout, "db:/from/env.db\n") {
		t.Fatalf("recheck did not pass AGENTRT_DB on: %q", r.stdout)
	}
}

// Without agentrt-policy next to agentrt or on PATH, the command fails in
// one sentence that says how to get it: for a development build (a test
// binary is one), make build from the checkout, since no go install
// @latest can serve a companion of an unreleased build.
func TestPolicy_MissingProgramSaysHowToInstallIt(t *testing.T) {
	old := findPolicyProgram
	findPolicyProgram = func() (string, error) { return "", os.ErrNotExist }
	t.Cleanup(func() { findPolicyProgram = old })
	for _, args := range [][]string{{"policy", "check", "p.yaml"}, {"recheck", "-policy", "p.yaml", "run-1"}} {
		r := (*fixture)(nil).runWith(t, func(*env) {}, nil, args...)
		oneSentence(t, r, "so build it from the agentrt checkout with 'make build'")
	}
}

// Without agentrt-console next to agentrt or on PATH, serve fails in one
// sentence that says how to build it from the checkout.
func TestServe_MissingProgramSaysHowToInstallIt(t *testing.T) {
	old := findConsoleProgram
	findConsoleProgram = func() (string, error) { return "", os.ErrNotExist }
	t.Cleanup(func() { findConsoleProgram = old })
	r := (*fixture)(nil).runWith(t, func(*env) {}, nil, "serve")
	oneSentence(t, r, "needs agentrt-console, which is neither next to agentrt nor on PATH, so build it from the agentrt checkout with 'make build'")
}

// The real agentrt, built from the checkout and alone in its directory,
// with no agentrt-policy on PATH, says to run make build rather than a go
// install @latest that cannot work before a release.
func TestPolicy_MissingProgramFromACheckoutSaysMakeBuild(t *testing.T) {
	src, err := os.ReadFile(buildAgentrt(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentrt")
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, bin, []string{"PATH=" + t.TempDir()}, "policy", "check", "p.yaml")
	oneSentence(t, r, "so build it from the agentrt checkout with 'make build'")
	if strings.Contains(r.stderr, "@latest") {
		t.Errorf("the hint still names @latest: %s", r.stderr)
	}
}
