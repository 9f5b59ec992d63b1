// Command agentrt-policy checks, tests and explains declarative policy
// files, and re-checks a recorded run against one. agentrt runs it for
// `agentrt policy ...`. See cmd/internal/policycli for the commands.
// It lives in the cmd module, beside agentrt, so that policy/cel, the
// package, requires no backend module.
package main

import (
	"os"

	"github.com/agentrt/agentrt/cmd/internal/policycli"
	_ "github.com/agentrt/agentrt/postgres" // recheck -db postgres://…
	_ "github.com/agentrt/agentrt/sqlite"   // recheck -db FILE
)

func main() {
	os.Exit(policycli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
