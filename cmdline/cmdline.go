// Package cmdline runs the agentrt command line for a main package. Its
// -db flag opens databases through the backend registry
// (github.com/agentrt/agentrt/backend): a main that links a backend with a
// blank import (as the distribution's cmd/agentrt links sqlite and
// postgres) serves that backend's URLs in every command, and the core
// module never imports the backend.
package cmdline

import (
	"io"

	"github.com/agentrt/agentrt/internal/cli"
	_ "github.com/agentrt/agentrt/sqlite" // plain paths and sqlite: URLs
)

// Run runs the command line: args are the arguments after the program name.
// It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Run(args, stdin, stdout, stderr)
}

// Exit codes, as the core's command line returns them.
const (
	ExitOK      = cli.ExitOK
	ExitFailure = cli.ExitFailure
	ExitUsage   = cli.ExitUsage
)
