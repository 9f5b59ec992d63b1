package sqlite

import (
	"context"
	"strings"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
)

// The SQLite backend serves plain paths and sqlite: URLs (sqlite:runs.db,
// sqlite:///var/lib/agentrt/runs.db) in the backend registry.
func init() { backend.Register("sqlite", fileOpener{}) }

type fileOpener struct{}

func (fileOpener) Name() string { return "SQLite" }

func (fileOpener) OpenExisting(_ context.Context, dsn string, readOnly bool) (agentrt.Store, error) {
	st, err := OpenExisting(FilePath(dsn), readOnly)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (fileOpener) Create(_ context.Context, dsn string) (agentrt.Store, error) {
	st, err := Open(FilePath(dsn))
	if err != nil {
		return nil, err
	}
	return st, nil
}

// A path holds no secret.
func (fileOpener) Redact(dsn string) string { return dsn }

// FilePath returns the file a registry name of SQLite's means: the path
// after sqlite: (and after sqlite://), or the whole string when it has no
// such prefix.
func FilePath(dsn string) string {
	if len(dsn) >= 7 && strings.EqualFold(dsn[:7], "sqlite:") {
		dsn = dsn[7:]
		if rest, ok := strings.CutPrefix(dsn, "//"); ok {
			dsn = rest
		}
	}
	return dsn
}
