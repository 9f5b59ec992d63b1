package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/internal/sqlstore"
	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// SchemaVersion is the schema version this build writes and reads.
var SchemaVersion = func() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		panic("agentrt/sqlite: embedded migrations are broken")
	}
	return ms[len(ms)-1].Version
}()

func migrations() ([]sqlstore.Migration, error) {
	return sqlstore.ReadMigrations(migrationFS, "migrations")
}

// Store is a SQLite-backed agentrt.Store.
type Store struct {
	*sqlstore.Store
	path string
}

var _ agentrt.Store = (*Store)(nil)

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

var dialect = sqlstore.Dialect{
	Name:               "sqlite",
	InsertIgnorePrefix: "INSERT OR IGNORE INTO",
	Begin:              "BEGIN IMMEDIATE",
	HeadQuery: `SELECT (SELECT seq FROM events ORDER BY seq DESC LIMIT 1),
		(SELECT seq FROM sqlite_sequence WHERE name = 'events')`,
	Busy: isBusy,
}

func isBusy(err error) bool {
	var se *sqlite3.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3lib.SQLITE_BUSY || code == sqlite3lib.SQLITE_LOCKED
	}
	return false
}

// IsBusy reports whether err means the database was locked by another writer.
func IsBusy(err error) bool { return isBusy(err) }

// IsNotADatabase reports whether err means the file opened is not a
// SQLite database at all (SQLITE_NOTADB), as a text file named by mistake
// is not.
func IsNotADatabase(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3lib.SQLITE_NOTADB
}

// dsn builds a URI filename with the connection settings.
func dsn(path string, mode string, writer bool) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	prefix := "file:"
	if strings.HasPrefix(path, "/") {
		prefix = "file://"
	}
	q := []string{
		"_pragma=busy_timeout(5000)",
		"_pragma=foreign_keys(1)",
		"_pragma=trusted_schema(0)",
		"_defensive=1",
	}
	if mode != "" {
		q = append(q, "mode="+mode)
	}
	if writer {
		// secure_delete zeroes what a write frees, so content replaced by
		// an update or removed by erasure leaves no copy in free space.
		q = append(q, "_pragma=synchronous(FULL)", "_pragma=secure_delete(1)", "_txlock=immediate")
	} else {
		q = append(q, "_pragma=query_only(1)")
	}
	return prefix + esc + "?" + strings.Join(q, "&")
}

// Open opens the database at path for a driver, creating it owner-only if it
// does not exist and applying any missing migrations. A database newer than
// this build is refused with a *agentrt.SchemaVersionError, a schema that is
// not exactly the one the migrations create with a
// *agentrt.UnsafeSchemaError, and a file another account owns or others can
// write with agentrt.ErrInsecureMode. A refused file is left unchanged.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("agentrt: sqlite.Open needs a database path")
	}
	if err := secureFiles(path, true, false); err != nil {
		return nil, err
	}
	return open(path, false, false)
}

// OpenExisting opens a database an operator names. It refuses a symbolic link
// (ErrSymlink) and anything that is not a regular file, never creates, never
// migrates, and refuses any schema version but this build's and any schema
// but the one its migrations create. It checks everything before it writes,
// so a refused file is left unchanged. A read-only store never writes or
// changes a file's mode.
func OpenExisting(path string, readOnly bool) (*Store, error) {
	if path == "" {
		return nil, errors.New("agentrt: a database path is required")
	}
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("agentrt: no database at %s: %w", path, agentrt.ErrNotFound)
		}
		return nil, fmt.Errorf("agentrt: cannot read %s: %w", path, err)
	}
	if err := files.Check(path, fi); err != nil {
		return nil, err
	}
	if err := secureFiles(path, false, false); err != nil {
		return nil, err
	}
	return open(path, true, readOnly)
}

// open checks the schema before anything writes: the writer's first
// statement that could change the file (tightening its mode, switching it
// to WAL, migrating) runs only once nothing will refuse it.
func open(path string, existing, readOnly bool) (st *Store, err error) {
	var closers []*sql.DB
	defer func() {
		if err != nil {
			for _, db := range closers {
				db.Close()
			}
		}
	}()
	mode := "rwc"
	if existing {
		mode = "rw"
	}
	var w *sql.DB
	if !readOnly {
		w, err = sql.Open("sqlite", dsn(path, mode, true))
		if err != nil {
			return nil, err
		}
		closers = append(closers, w)
		// One connection is held by the store's writer; the other serves
		// DB() and open-time statements.
		w.SetMaxOpenConns(2)
		w.SetConnMaxLifetime(0)
		w.SetMaxIdleConns(2)
	}
	var r *sql.DB
	if readOnly {
		r, err = openReader(dsn(path, "ro", false))
	} else {
		r, err = openReader(dsn(path, "rw", false))
	}
	if err != nil {
		return nil, err
	}
	closers = append(closers, r)
	r.SetMaxOpenConns(4)
	ctx := context.Background()
	check := r
	if !readOnly {
		check = w
	}
	version, err := checkSchema(ctx, check, path)
	if err != nil {
		return nil, err
	}
	if existing && version != SchemaVersion {
		if version == 0 {
			return nil, errNotAgentrt(path)
		}
		return nil, &agentrt.SchemaVersionError{Path: path, Database: version, Build: SchemaVersion}
	}
	if !readOnly {
		// Nothing refuses the file now: tighten a mode others can read.
		if err := secureFiles(path, false, true); err != nil {
			return nil, err
		}
		if err := enableWAL(ctx, w); err != nil {
			return nil, fmt.Errorf("agentrt: %s: %w", path, err)
		}
		if !existing {
			if err := migrate(ctx, w, path); err != nil {
				return nil, err
			}
		}
		// WAL sidecars now exist; hold them to the same rules.
		if err := secureFiles(path, false, true); err != nil {
			return nil, err
		}
	}
	var lease *sql.DB
	if !readOnly {
		lease, err = sql.Open("sqlite", dsn(path, "rw", true))
		if err != nil {
			return nil, err
		}
		closers = append(closers, lease)
		lease.SetMaxOpenConns(1)
	}
	handles := append([]*sql.DB(nil), closers...)
	s := sqlstore.New(sqlstore.Options{
		Dialect: dialect, Writer: w, Reader: r, Lease: lease, Path: path, ReadOnly: readOnly,
		Close: func() error {
			var first error
			for _, db := range handles {
				if err := db.Close(); err != nil && first == nil {
					first = err
				}
			}
			return first
		},
	})
	return &Store{Store: s, path: path}, nil
}

func enableWAL(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal mode is %q, not wal", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// migrate applies the missing migrations in one write transaction. It
// checks the schema again inside that transaction, under the write lock, so
// a file another opener migrated or changed since open's check is held to
// the same rule, and checks the result.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	v, err := checkSchema(ctx, tx, path)
	if err != nil {
		return err
	}
	if v == SchemaVersion {
		return nil
	}
	if v == 0 {
		if _, err := tx.ExecContext(ctx, migrationsTable); err != nil {
			return err
		}
	}
	for _, m := range ms {
		if m.Version <= v {
			continue
		}
		if err := applyMigration(ctx, tx, m); err != nil {
			return fmt.Errorf("agentrt: migration %s: %w", m.Name, err)
		}
	}
	if v, err := checkSchema(ctx, tx, path); err != nil {
		return err
	} else if v != SchemaVersion {
		return fmt.Errorf("agentrt: %s: the migrations left schema version %d, not %d", path, v, SchemaVersion)
	}
	return tx.Commit()
}

// applyMigration runs one migration and records it.
func applyMigration(ctx context.Context, ex execQuerier, m sqlstore.Migration) error {
	if _, err := ex.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	_, err := ex.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.Version, time.Now().UTC().Format(time.RFC3339Nano))
	return err
}
