package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
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
	return ms[len(ms)-1].version
}()

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s has no number", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, err
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s out of sequence", m.name)
		}
	}
	return out, nil
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
	HeadQuery: `SELECT (SELECT seq FROM events ORDER BY seq DESC LIMIT 1), (SELECT hash FROM events ORDER BY seq DESC LIMIT 1),
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
		q = append(q, "_pragma=synchronous(FULL)", "_txlock=immediate")
	} else {
		q = append(q, "_pragma=query_only(1)")
	}
	return prefix + esc + "?" + strings.Join(q, "&")
}

// Open opens the database at path for a driver, creating it owner-only if it
// does not exist and applying any missing migrations. A database newer than
// this build is refused with a *agentrt.SchemaVersionError.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("agentrt: sqlite.Open needs a database path")
	}
	if err := secureFiles(path, true, true); err != nil {
		return nil, err
	}
	return open(path, false, false)
}

// OpenExisting opens a database an operator names. It refuses a symbolic link
// (ErrSymlink) and anything that is not a regular file, never creates, never
// migrates, and refuses any schema version but this build's. A read-only store
// never writes or changes a file's mode.
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
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &agentrt.SymlinkError{Path: path}
	}
	if !fi.Mode().IsRegular() {
		return nil, &agentrt.InsecureModeError{Path: path, Mode: uint32(fi.Mode().Perm()), Reason: "it is not a regular file"}
	}
	if err := secureFiles(path, false, !readOnly); err != nil {
		return nil, err
	}
	return open(path, true, readOnly)
}

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
	if readOnly {
		mode = "ro"
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
	first := w
	if readOnly {
		first, err = openReader(dsn(path, "ro", false))
		if err != nil {
			return nil, err
		}
		closers = append(closers, first)
	}
	ctx := context.Background()
	if err := checkSafeSchema(ctx, first, path); err != nil {
		return nil, err
	}
	if !readOnly {
		if err := enableWAL(ctx, w); err != nil {
			return nil, fmt.Errorf("agentrt: %s: %w", path, err)
		}
		if existing {
			if err := checkVersion(ctx, w, path, true); err != nil {
				return nil, err
			}
		} else if err := migrate(ctx, w, path); err != nil {
			return nil, err
		}
		// WAL sidecars now exist; hold them to the same rules.
		if err := secureFiles(path, false, true); err != nil {
			return nil, err
		}
	} else if err := checkVersion(ctx, first, path, true); err != nil {
		return nil, err
	}
	r := first
	if !readOnly {
		r, err = openReader(dsn(path, "rw", false))
		if err != nil {
			return nil, err
		}
		closers = append(closers, r)
	}
	r.SetMaxOpenConns(4)
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

func checkSafeSchema(ctx context.Context, db *sql.DB, path string) error {
	var typ, name string
	err := db.QueryRowContext(ctx, "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') LIMIT 1").Scan(&typ, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("agentrt: %s is not a readable SQLite database: %w", path, err)
	}
	return &agentrt.UnsafeSchemaError{Path: path, Type: typ, Name: name}
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

func checkVersion(ctx context.Context, db *sql.DB, path string, exact bool) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&n); err != nil {
		return fmt.Errorf("agentrt: %s is not a readable SQLite database: %w", path, err)
	}
	if n == 0 {
		return fmt.Errorf("agentrt: %s is not an agentrt database (it has no schema_migrations table): %w", path, agentrt.ErrSchemaVersion)
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&v); err != nil {
		return err
	}
	if int(v.Int64) > SchemaVersion || (exact && int(v.Int64) != SchemaVersion) {
		return &agentrt.SchemaVersionError{Path: path, Database: int(v.Int64), Build: SchemaVersion}
	}
	return nil
}

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
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"); err != nil {
		return err
	}
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&v); err != nil {
		return err
	}
	if int(v.Int64) > SchemaVersion {
		return &agentrt.SchemaVersionError{Path: path, Database: int(v.Int64), Build: SchemaVersion}
	}
	for _, m := range ms {
		if m.version <= int(v.Int64) {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("agentrt: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.version, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
	}
	return tx.Commit()
}
