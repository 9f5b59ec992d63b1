package policycli

import (
	"errors"
	"flag"
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

type env struct {
	stdout, stderr io.Writer
}

type command struct {
	name, usage, help string
	run               func(e *env, c *command, args []string) int
}

var commands []*command

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
			if c := lookup(args[1]); c != nil {
				fmt.Fprintf(stdout, "usage: agentrt-policy %s %s\n\n%s\n", c.name, c.usage, c.help)
				return ExitOK
			}
			return e.usageError(nil, fmt.Sprintf("unknown command %q", trace.Sanitize(args[1])))
		}
		io.WriteString(stdout, usageText)
		return ExitOK
	}
	c := lookup(args[0])
	if c == nil {
		return e.usageError(nil, fmt.Sprintf("unknown command %q", trace.Sanitize(args[0])))
	}
	return c.run(e, c, args[1:])
}

// CommandNames lists agentrt-policy's commands, in the order help gives
// them.
func CommandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (e *env) usageError(c *command, msg string) int {
	fmt.Fprintf(e.stderr, "agentrt-policy: %s\n", msg)
	if c != nil {
		fmt.Fprintf(e.stderr, "usage: agentrt-policy %s %s\n", c.name, c.usage)
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

// parse parses flags placed before or after the positional arguments.
func (e *env) parse(c *command, fs *flag.FlagSet, args []string) ([]string, int, bool) {
	fs.SetOutput(io.Discard)
	pos, err := cliflag.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(e.stdout, "usage: agentrt-policy %s %s\n\n%s\n", c.name, c.usage, c.help)
		return nil, ExitOK, false
	}
	if err != nil {
		return nil, e.usageError(c, err.Error()), false
	}
	return pos, ExitOK, true
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
