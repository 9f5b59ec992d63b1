// Package cmdline runs the agentrt command line for a main package. Its
// -db flag opens databases through the backend registry
// (github.com/agentrt/agentrt/backend): a main that links a backend with a
// blank import (as the distribution's cmd/agentrt links sqlite and
// postgres) serves that backend's URLs in every command, and the core
// module never imports the backend.
package cmdline

import (
	"io"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cli"
	_ "github.com/agentrt/agentrt/sqlite" // plain paths and sqlite: URLs
)

// Run runs the command line: args are the arguments after the program name.
// It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Run(args, stdin, stdout, stderr)
}

// Options is what a main package wires into the command line from
// modules the core cannot import.
type Options struct {
	// Disclosure is the disclosure the engines the command line builds for
	// the user (agentrt demo, and resume of its runs) run with; the
	// distribution's cmd/agentrt sets the disclosure module's default
	// rules. Nil runs them without one.
	Disclosure agentrt.Disclosure
}

// RunWith is Run with what the main package wired in.
func RunWith(o Options, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.RunWith(cli.Options{Disclosure: o.Disclosure}, args, stdin, stdout, stderr)
}

// Exit codes, as the core's command line returns them.
const (
	ExitOK      = cli.ExitOK
	ExitFailure = cli.ExitFailure
	ExitUsage   = cli.ExitUsage
)
