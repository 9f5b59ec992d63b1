package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// Opener opens an existing database named by a URL whose scheme a build
// registered: the core's CLI knows SQLite files only, and a build that
// includes a backend module (postgres/cmd/agentrt) passes its opener in.
type Opener func(ctx context.Context, dsn string, readOnly bool) (agentrt.Store, error)

// RunWith is Run with openers for database URLs by scheme ("postgres").
func RunWith(args []string, stdin io.Reader, stdout, stderr io.Writer, openers map[string]Opener) int {
	e := newEnv(stdin, stdout, stderr)
	e.openers = openers
	return e.run(args)
}

// dsnScheme returns the scheme of a database URL, "" for a file path.
func dsnScheme(db string) string {
	scheme, rest, ok := strings.Cut(db, "://")
	if !ok || rest == "" || strings.ContainsAny(scheme, "/.\\") {
		return ""
	}
	scheme = strings.ToLower(scheme)
	if scheme == "postgresql" {
		scheme = "postgres"
	}
	return scheme
}

// redactDSN hides a URL's password in anything printed.
func redactDSN(db string) string {
	u, err := url.Parse(db)
	if err != nil {
		return "a database URL that does not parse"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// openReader opens the database named by -db for reading through the seam:
// a SQLite file, or a URL a registered opener serves.
func (e *env) openReader(db string) (agentrt.Store, string, int) {
	scheme := dsnScheme(db)
	if scheme == "" {
		st, code := e.open(db, true)
		if code != ExitOK {
			return nil, db, code
		}
		return st, db, ExitOK
	}
	name := redactDSN(db)
	open := e.openers[scheme]
	if open == nil {
		fmt.Fprintf(e.stderr, "agentrt: %s is a %s URL, and this agentrt reads SQLite files only; use the build that includes that backend: go run ./postgres/cmd/agentrt -db URL COMMAND (or install github.com/agentrt/agentrt/postgres/cmd/agentrt).\n",
			trace.Sanitize(name), trace.Sanitize(scheme))
		return nil, name, ExitFailure
	}
	st, err := open(background(), db, true)
	if err != nil {
		fmt.Fprintln(e.stderr, "agentrt: "+openRefusal(name, err))
		return nil, name, ExitFailure
	}
	return st, name, ExitOK
}
