// Command agentrt inspects and decides runs in an agentrt runs database, and
// runs a demo of the runtime with no network and no key. See
// internal/cli for the commands.
//
// This is the one agentrt binary: it links every storage backend, so -db
// takes a SQLite file (a plain path or sqlite:PATH) or a PostgreSQL DSN
// (postgres://… or postgresql://…, or a libpq key=value string) in every
// command. It lives in the distribution module github.com/agentrt/agentrt/cmd
// so that the core module never depends on pgx; `agentrt version` lists the
// backends it has.
//
// The engines it builds for the user (agentrt demo, and resume of a demo
// run) redact secrets in tool outcomes with the disclosure module's
// default rules, which the core module cannot import.
package main

import (
	"fmt"
	"os"

	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/disclosure"
	_ "github.com/agentrt/agentrt/postgres" // postgres:// and postgresql:// DSNs
	_ "github.com/agentrt/agentrt/sqlite"   // plain paths and sqlite: URLs
)

func main() {
	rules, err := disclosure.New(disclosure.Default())
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentrt: the default disclosure rules: %v\n", err)
		os.Exit(cmdline.ExitFailure)
	}
	os.Exit(cmdline.RunWith(cmdline.Options{Disclosure: rules}, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
