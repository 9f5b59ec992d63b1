// Command agentrt inspects and decides runs in an agentrt runs database, and
// runs a demo of the runtime with no network and no key. See
// internal/cli for the commands.
package main

import (
	"os"

	"github.com/agentrt/agentrt/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
