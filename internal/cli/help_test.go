package cli

import (
	"bytes"
	"errors"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
// no AGENTRT_DB and env's changes (NAME=VALUE sets, NAME unsets), and returns what it printed and its exit code.
func runBinary(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := osexec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	// env's entries without "=" name variables to unset.
	drop := map[string]bool{dbEnv: true}
	for _, kv := range env {
		k, _, set := strings.Cut(kv, "=")
		drop[k] = true
		if set {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			cmd.Env = append(cmd.Env, kv)
		}
	}
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

// Every flag a usage line names is in the command's help, and approve and
// reject take the same flags, -key among them: approve's usage once named
// -key its help left out, and reject accepted -key its usage left out.
func TestHelp_UsageLineFlagsAreAllExplained(t *testing.T) {
	flagRE := regexp.MustCompile(`-[a-z][a-z-]*`)
	for _, c := range commands {
		for _, fl := range flagRE.FindAllString(c.usage, -1) {
			if !strings.Contains(commandHelp[c.name], fl+" ") {
				t.Errorf("agentrt %s: usage names %s, its help does not", c.name, fl)
			}
		}
	}
	if approveCommand.usage != rejectCommand.usage || !strings.Contains(rejectCommand.usage, "-key FILE") {
		t.Errorf("approve's usage %q and reject's %q differ", approveCommand.usage, rejectCommand.usage)
	}
	r := (*fixture)(nil).run(t, nil, "help", "approve")
	if !strings.Contains(r.stdout, "\n  -key FILE ") {
		t.Errorf("approve's help lists no -key FILE:\n%s", r.stdout)
	}
}

// After approve, agentrt says what happens next without claiming the
// program that started the run must resume it (a worker or agentrt-proxy
// carries it on by itself), and prints the exact command to watch it.
func TestApprove_SaysWhatCarriesTheRunOn(t *testing.T) {
	f := newFixture(t)
	r := f.run(t, nil, "-db", f.path, "approve", f.small, "-yes", "-by", "op")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "program that started it") {
		t.Errorf("approve still says only the starting program resumes the run:\n%s", r.stdout)
	}
	for _, want := range []string{"a worker claims the run by itself", "agentrt-proxy runs the call", "watch it with: agentrt -db " + shellQuote(f.path) + " follow -run " + f.small} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("approve does not say %q:\n%s", want, r.stdout)
		}
	}
}

// With USER unset, as in most containers, the real binary's approve,
// cancel and approvers invite record the account's name from the system's
// user database instead of refusing.
func TestBy_FallsBackToTheAccountNameWithoutUSER(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.Username == "" {
		t.Skipf("this account has no user name to fall back to (%v)", err)
	}
	bin := buildAgentrt(t)
	f := newFixture(t)
	r := runBinary(t, bin, []string{"USER"}, "-db", f.path, "approve", f.small, "-yes")
	if r.code != ExitOK || !strings.Contains(r.stdout, "approved by "+u.Username+"\n") {
		t.Errorf("approve without USER: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, bin, []string{"USER"}, "-db", f.path, "cancel", f.big)
	if r.code != ExitOK || !strings.HasSuffix(r.stdout, " by "+u.Username+"\n") {
		t.Errorf("cancel without USER: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, bin, []string{"USER"}, "-db", f.path, "approvers", "invite", "alice")
	if r.code != ExitOK {
		t.Errorf("approvers invite without USER: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	var by string
	if err := rawDB(t, f.path).QueryRow("SELECT decided_by FROM approvals WHERE run_id = ?", f.small).Scan(&by); err != nil || by != u.Username {
		t.Errorf("decided_by %q (%v), want %q", by, err, u.Username)
	}
}
