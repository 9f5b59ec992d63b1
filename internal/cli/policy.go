package cli

import (
	"errors"
	"os/signal"
	"strings"
	"syscall"

	"os"
	osexec "os/exec"
	"path/filepath"
)

// The declarative policy commands live in agentrt-policy, built from the
// policy/cel module, so that the core (and this binary) never links CEL.
// agentrt runs it, passing the arguments and the streams through.

// policyProgram is the command agentrt runs for policy and recheck.
const policyProgram = "agentrt-policy"

// policyPackage is agentrt-policy's main package.
const policyPackage = "github.com/agentrt/agentrt/cmd/agentrt-policy"

// installHint says how to get the companion built from pkg: from the
// checkout with make build when this agentrt is a development build (no
// release holds a companion of it), else go install at this release.
func installHint(pkg string) string {
	v := version()
	if v == "devel" || !strings.HasPrefix(v, "v") {
		return "build it from the agentrt checkout with 'make build', which puts every agentrt binary side by side in bin/"
	}
	return "install it with 'go install " + pkg + "@" + v + "'"
}

var policyCommand = &command{
	name:    "policy",
	summary: "check, test or explain a declarative policy file (runs agentrt-policy)",
	usage:   "check|test|explain [arguments]",
	subs:    []string{"check", "test", "explain"},
	run:     runPolicy,
}

var recheckCommand = &command{
	name:    "recheck",
	summary: "re-ask a policy file about every decision a run recorded (runs agentrt-policy)",
	usage:   "-policy FILE <run>",
	run:     runRecheck,
}

func init() {
	commandHelp["policy"] = `Runs agentrt-policy, found next to agentrt or on PATH, with the same
arguments:
  policy check FILE             compile FILE; warn on rules that never match
  policy test FILE CASES        judge a table of requests; exit 1 on a mismatch
  policy explain FILE -tool T   which rule decides a request, and why
Run 'agentrt policy help COMMAND' for a command's flags. Build it from a
checkout with 'make build', or install it with
  go install ` + policyPackage + `@VERSION`
	commandHelp["recheck"] = `Re-asks the policy file about every policy decision the run recorded and
prints whether each is decided alike; exits 1 when any is not. Runs
'agentrt-policy recheck -db DB -policy FILE <run>'; the database opens
read-only and nothing is written.
  -policy FILE  the policy file to ask`
}

// findPolicyProgram is where agentrt-policy is: next to the running agentrt,
// else on PATH. A variable so tests can point it elsewhere.
var findPolicyProgram = func() (string, error) { return findCompanion(policyProgram) }

// findCompanion finds a program built from a nested module: next to the
// running agentrt, else on PATH.
func findCompanion(name string) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return osexec.LookPath(name)
}

func runPolicy(e *env, g *global, c *command, args []string) int {
	if g.json {
		return e.usageError(c, "agentrt policy has no -json output")
	}
	if len(args) == 0 {
		return e.usageError(c, "missing the policy command: check, test or explain")
	}
	return e.runPolicyProgram(args)
}

func runRecheck(e *env, g *global, c *command, args []string) int {
	if g.json {
		return e.usageError(c, "agentrt recheck has no -json output")
	}
	full := []string{"recheck"}
	if g.db != "" {
		full = append(full, "-db", g.db)
	}
	return e.runPolicyProgram(append(full, args...))
}

// runPolicyProgram runs agentrt-policy with args and the command's streams,
// and exits as it exits.
func (e *env) runPolicyProgram(args []string) int {
	return e.runCompanion(findPolicyProgram, policyProgram, policyPackage, args)
}

// runCompanion runs the program find locates with args and the command's
// streams, and exits as it exits; when it is missing, it says how to
// get it (pkg is its main package).
func (e *env) runCompanion(find func() (string, error), name, pkg string, args []string) int {
	path, err := find()
	if err != nil {
		return e.fail("this command needs %s, which is neither next to agentrt nor on PATH, so %s.", name, installHint(pkg))
	}
	cmd := osexec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	cmd.Env = os.Environ()
	if db := e.getenv(dbEnv); db != "" {
		cmd.Env = append(cmd.Env, dbEnv+"="+db)
	}
	// An interrupt or a termination of agentrt is passed on, so stopping
	// `agentrt serve` stops the console it runs rather than orphaning it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err = cmd.Start(); err == nil {
		done := make(chan struct{})
		go func() {
			for {
				select {
				case s := <-sigs:
					cmd.Process.Signal(s)
				case <-done:
					return
				}
			}
		}()
		err = cmd.Wait()
		close(done)
	}
	var exit *osexec.ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	return e.fail("running %s: %v", path, err)
}
