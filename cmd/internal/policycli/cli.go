package policycli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/trace"
)

// Exit codes.
const (
	// ExitOK: the command did what it was asked and found nothing wrong.
	ExitOK = 0
	// ExitFailure: a file was refused, a case failed, an evaluation
	// failed, or a recorded decision is decided differently now.
	ExitFailure = 1
	// ExitUsage: the command line was wrong; nothing was read.
	ExitUsage = 2
)

// env is what every command is handed: its streams and the command the
// command line named, whose usage a usage error prints.
type env struct {
	stdout, stderr io.Writer
	cmd            *command
}

type command = cliflag.Command[*env]

var commands []*command

// kit runs every command: -h prints the command's usage and help, a flag it
// does not take is a usage error naming it.
var kit = &cliflag.Kit[*env]{
	Help: func(e *env, path []*command) { e.help(path[len(path)-1]) },
	UsageError: func(e *env, path []*command, msg string) int {
		e.cmd = path[len(path)-1]
		return e.usageError(msg)
	},
}

func init() {
	commands = []*command{checkCommand, testCommand, explainCommand, recheckCommand, versionCommand}
}

const usageText = `agentrt-policy checks, tests and explains declarative policy files.

usage: agentrt-policy <command> [arguments]

commands:
  check FILE                 compile FILE; warn on rules that can never match
  test FILE CASES            judge a table of requests; exit 1 on a mismatch
  explain FILE -tool T ...   show which rule decides one request, and why
  recheck -db DB -policy FILE RUN
                             re-ask FILE about every decision RUN recorded
  version                    print the version and the Go release it was built with

Exit status: 0 success; 1 a refused file, a failed case or evaluation, or a
decision decided differently; 2 usage.
Run 'agentrt-policy help COMMAND' for a command's flags.
`

// Run runs agentrt-policy with args (after the program name) and returns
// the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		io.WriteString(stderr, usageText)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 2 {
			if c := cliflag.Find(commands, args[1]); c != nil {
				e.help(c)
				return ExitOK
			}
			return e.usageError(fmt.Sprintf("unknown command %q", trace.Sanitize(args[1])))
		}
		io.WriteString(stdout, usageText)
		return ExitOK
	}
	c := cliflag.Find(commands, args[0])
	if c == nil {
		return e.usageError(fmt.Sprintf("unknown command %q", trace.Sanitize(args[0])))
	}
	e.cmd = c
	return kit.Exec(e, c, args[1:])
}

// CommandNames lists agentrt-policy's commands, in the order help gives
// them.
func CommandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.Name
	}
	return names
}

// help prints c's usage line and help on stdout.
func (e *env) help(c *command) {
	fmt.Fprintf(e.stdout, "usage: agentrt-policy %s %s\n\n%s\n", c.Name, c.Usage, c.Help)
}

// usageError tells a mistake in the command line, with the usage of the
// command it names if any, and returns ExitUsage.
func (e *env) usageError(msg string) int {
	fmt.Fprintf(e.stderr, "agentrt-policy: %s\n", msg)
	if c := e.cmd; c != nil {
		fmt.Fprintf(e.stderr, "usage: agentrt-policy %s %s\n", c.Name, c.Usage)
	} else {
		fmt.Fprintln(e.stderr, "run 'agentrt-policy help' for usage")
	}
	return ExitUsage
}

// fail prints one sanitized sentence and returns ExitFailure.
func (e *env) fail(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	// A refusal from the policy package or the core names its package;
	// this program's own prefix is the only one printed.
	for _, p := range []string{"celpolicy: ", "agentrt: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	msg = strings.TrimSuffix(msg, ".")
	fmt.Fprintf(e.stderr, "agentrt-policy: %s.\n", trace.Sanitize(msg))
	return ExitFailure
}

// load loads a policy file, printing a refusal as one sentence.
func (e *env) load(path string) (*cel.Policy, int) {
	p, err := cel.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, e.fail("there is no policy file at %s", path)
	}
	if err != nil {
		return nil, e.fail("%v", err)
	}
	return p, ExitOK
}

func s(v string) string { return trace.Sanitize(v) }

// getenv is os.Getenv, a variable so tests may fix the environment.
var getenv = os.Getenv
