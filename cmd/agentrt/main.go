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
package main

import (
	"os"

	"github.com/agentrt/agentrt/cmdline"
	_ "github.com/agentrt/agentrt/postgres" // postgres:// and postgresql:// DSNs
	_ "github.com/agentrt/agentrt/sqlite"   // plain paths and sqlite: URLs
)

func main() {
	os.Exit(cmdline.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
