package postgres

import (
	"context"
	"regexp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
)

// Linking this package registers the PostgreSQL backend for postgres:// and
// postgresql:// URLs, and for libpq key=value strings (host=… dbname=…), in
// the backend registry: backend.Open opens such a DSN with OpenExisting,
// backend.Create with Open.
func init() {
	backend.Register("postgres", urlOpener{})
	backend.Register("postgresql", urlOpener{})
}

type urlOpener struct{}

func (urlOpener) Name() string { return "PostgreSQL" }

func (urlOpener) OpenExisting(ctx context.Context, dsn string, readOnly bool) (agentrt.Store, error) {
	st, err := OpenExisting(ctx, dsn, readOnly)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (urlOpener) Create(ctx context.Context, dsn string) (agentrt.Store, error) {
	st, err := Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (urlOpener) Redact(dsn string) string { return Redact(dsn) }

// libpqSetting finds a connection setting in a string: what makes a
// key=value string (even one that does not parse) a Postgres DSN rather
// than a file name.
var libpqSetting = regexp.MustCompile(`(?i)(?:^|\s)(?:host|hostaddr|port|dbname|user|password|sslpassword|service|sslmode)\s*=`)

// Claims takes a key=value string that names a connection setting, so it
// is opened (and refused, if it does not parse) as a DSN, never as a path.
func (urlOpener) Claims(dsn string) bool { return isURL(dsn) || libpqSetting.MatchString(dsn) }
