// Command agentrt is the agentrt command line with the PostgreSQL backend:
// -db takes a postgres:// DSN as well as a SQLite file. It is the core's
// command line with one opener added, so the core never imports pgx.
//
//	go run ./postgres/cmd/agentrt -db 'postgres://user@host/db' verify
package main

import (
	"context"
	"os"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/postgres"
)

func main() {
	open := func(ctx context.Context, dsn string, readOnly bool) (agentrt.Store, error) {
		return postgres.OpenExisting(ctx, dsn, readOnly)
	}
	os.Exit(cmdline.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, map[string]cmdline.Opener{"postgres": open}))
}
