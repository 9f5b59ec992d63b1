// Package cmdline runs the agentrt command line for a main package. The
// core's cmd/agentrt reads SQLite files; a build that includes a storage
// backend module passes an opener for that backend's URL scheme, so the
// core never imports the backend (postgres/cmd/agentrt does this for
// postgres:// DSNs). Commands that read through the storage seam (verify)
// then work on that backend too.
package cmdline

import (
	"context"
	"io"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cli"
)

// Opener opens an existing database named by a URL, read-only when asked;
// it must never create or migrate one.
type Opener func(ctx context.Context, dsn string, readOnly bool) (agentrt.Store, error)

// Run runs the command line: args are the arguments after the program name;
// openers maps a URL scheme ("postgres") to its opener. It returns the exit
// code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, openers map[string]Opener) int {
	m := make(map[string]cli.Opener, len(openers))
	for scheme, o := range openers {
		m[scheme] = cli.Opener(o)
	}
	return cli.RunWith(args, stdin, stdout, stderr, m)
}

// Exit codes, as the core's command line returns them.
const (
	ExitOK      = cli.ExitOK
	ExitFailure = cli.ExitFailure
	ExitUsage   = cli.ExitUsage
)
