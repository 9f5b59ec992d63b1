package cli

import (
	"bytes"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// policyPackage is agentrt-policy's main package, built next to agentrt so
// agentrt policy finds it as an installed one would be found.
const policyPackage = "github.com/agentrt/agentrt/policy/cel/cmd/agentrt-policy"

// buildPolicyNextToAgentrt builds agentrt and agentrt-policy into one
// directory and returns agentrt's path.
func buildPolicyNextToAgentrt(t *testing.T) string {
	t.Helper()
	bin := buildAgentrt(t)
	cmd := osexec.Command("go", "build", "-o", filepath.Join(filepath.Dir(bin), "agentrt-policy"), policyPackage)
	cmd.Dir = filepath.Join("..", "..", "cmd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build agentrt-policy: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs the real agentrt with args in an empty directory, with
// no AGENTRT_DB, and returns what it printed and its exit code.
func runBinary(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := osexec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, dbEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *osexec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running agentrt %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// Every command of agentrt and every subcommand of one that has them
// answers -h and --help with its help on stdout and exit 0, with no
// database named and nothing on stderr: no panic (show -h and events -h
// once dereferenced a nil store), no "unknown budgets command". The list
// comes from the command table, so a new command is covered unasked.
func TestHelp_EveryCommandAndSubcommandAnswersHelp(t *testing.T) {
	bin := buildPolicyNextToAgentrt(t)
	var lines [][]string
	for _, c := range commands {
		lines = append(lines, []string{c.name})
		for _, sub := range c.subs {
			lines = append(lines, []string{c.name, sub})
		}
	}
	for _, line := range lines {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, line...), h)
			r := runBinary(t, bin, nil, args...)
			want := "usage: agentrt [-db PATH] [-json] " + line[0] + " "
			if len(line) > 1 && line[0] == "policy" {
				want = "usage: agentrt-policy " + line[1] + " "
			}
			if r.code != ExitOK || r.stderr != "" || !strings.HasPrefix(r.stdout, want) {
				t.Errorf("agentrt %s: exit %d, stdout starts %q, stderr %q", strings.Join(args, " "), r.code, clip(r.stdout, 80), clip(r.stderr, 300))
			}
		}
	}
	if len(lines) < len(commands)+10 {
		t.Fatalf("only %d command lines: the table lost its subcommands", len(lines))
	}
}
