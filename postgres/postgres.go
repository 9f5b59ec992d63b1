package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// SchemaVersion is the schema version this build writes and reads.
var SchemaVersion = func() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		panic("agentrt/postgres: embedded migrations are broken")
	}
	return ms[len(ms)-1].Version
}()

func migrations() ([]sqlstore.Migration, error) {
	return sqlstore.ReadMigrations(migrationFS, "migrations")
}

// Store is a PostgreSQL-backed agentrt.Store.
type Store struct {
	*sqlstore.Store
	pool *pgxpool.Pool
	name string
}

var (
	_ agentrt.Store         = (*Store)(nil)
	_ agentrt.DatabaseClock = (*Store)(nil)
)

// DatabaseNow returns the database's time, the clock leases are kept on.
func (s *Store) DatabaseNow(ctx context.Context) (time.Time, error) { return s.ClockNow(ctx) }

// Pool returns the connection pool the store reads through.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

var dialect = sqlstore.Dialect{
	Name:               "postgres",
	Numbered:           true,
	InsertIgnorePrefix: "INSERT INTO",
	InsertIgnoreSuffix: " ON CONFLICT DO NOTHING",
	Begin:              "BEGIN",
	SeqFromDatabase:    true,
	SharedWriters:      true,
	DatabaseClock:      true,
	ClaimLock:          " FOR UPDATE SKIP LOCKED",
	ByteOrder:          ` COLLATE "C"`,
	Translate:          sqlstore.PostgresTranslate,
	Busy:               isBusy,
	ExecBatch:          execBatch,
}

// isBusy reports a transaction the server refused for contention, which
// is safe to try again.
func isBusy(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
			return true
		}
	}
	return false
}

// Options tune Open. The zero value is the default.
type Options struct {
	// MaxConns bounds the reader pool (zero: 8). The writer and the lease
	// renewer use one connection each beside it.
	MaxConns int32
	// ReadOnly opens for reading: nothing is created or migrated, and an
	// older or newer schema is refused.
	ReadOnly bool
	// IdleInTransaction bounds how long the server keeps a write
	// transaction whose client went silent (zero: 5s): a writer cut off
	// mid-transaction holds the rows it wrote (its runs' chains among
	// them) until then. A DSN that sets idle_in_transaction_session_timeout wins.
	IdleInTransaction time.Duration
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// string), applies any missing migrations, and returns a store. A database
// migrated by a newer build is refused with a *agentrt.SchemaVersionError;
// one holding agentrt's table names without its version table, with an
// error matching agentrt.ErrSchemaVersion.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, Options{})
}

// OpenExisting opens a database an operator names: it never creates or
// migrates, and refuses any schema version but this build's.
func OpenExisting(ctx context.Context, dsn string, readOnly bool) (*Store, error) {
	return openStore(ctx, dsn, Options{ReadOnly: readOnly}, true)
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dsn string, o Options) (*Store, error) {
	return openStore(ctx, dsn, o, o.ReadOnly)
}

func openStore(ctx context.Context, dsn string, o Options, existing bool) (st *Store, err error) {
	if dsn == "" {
		return nil, errors.New("agentrt: postgres.Open needs a DSN")
	}
	name := Redact(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(name, dsn, err)
	}
	cfg.MaxConns = 8
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	idle := 5 * time.Second
	if o.IdleInTransaction > 0 {
		idle = o.IdleInTransaction
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	cfg.ConnConfig.RuntimeParams["application_name"] = "agentrt"
	if o.ReadOnly {
		// The server refuses every write of a read-only store's sessions,
		// whatever a bug in this process would try.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
		// A reader (an operator's command, mostly) runs each query a few
		// times, not thousands: one round trip each (the extended protocol
		// with an unnamed statement), not a prepare and then an execute.
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrap(name, dsn, err)
	}
	var closers []func() error
	closers = append(closers, func() error { pool.Close(); return nil })
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	if err := pool.Ping(ctx); err != nil {
		return nil, wrap(name, dsn, err)
	}
	if existing {
		v, err := schemaVersion(ctx, pool)
		if err != nil {
			return nil, wrap(name, dsn, err)
		}
		if v == 0 {
			return nil, errNotAgentrt(name)
		}
		if v != SchemaVersion {
			return nil, &agentrt.SchemaVersionError{Path: name, Database: v, Build: SchemaVersion}
		}
	} else if err := migrate(ctx, pool, name); err != nil {
		return nil, &safeError{msg: scrub(err.Error(), dsn), err: err}
	}
	d := dialect
	if ordered, err := textInByteOrder(ctx, pool); err != nil {
		return nil, wrap(name, dsn, err)
	} else if ordered {
		// The primary key's index already orders ids byte by byte, so a
		// prefix's range reads it rather than every id.
		d.ByteOrder = ""
	}
	reader := stdlib.OpenDBFromPool(pool)
	closers = append(closers, reader.Close)
	var writer, lease *sql.DB
	if !o.ReadOnly {
		// The writer holds one connection for the store's life (its
		// prepared statements stay bound to it); the lease renewer has its
		// own, so a renewal never waits behind a commit.
		// A writer cut off mid-transaction holds its rows' locks until
		// the server ends its session: bound how long that can be.
		wcfg := cfg.ConnConfig.Copy()
		if _, ok := wcfg.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
			wcfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.Itoa(int(idle.Milliseconds()))
		}
		writer = stdlib.OpenDB(*wcfg)
		writer.SetMaxOpenConns(2)
		writer.SetMaxIdleConns(2)
		closers = append(closers, writer.Close)
		lease = stdlib.OpenDB(*cfg.ConnConfig.Copy())
		lease.SetMaxOpenConns(1)
		closers = append(closers, lease.Close)
	}
	handles := append([]func() error(nil), closers...)
	s := sqlstore.New(sqlstore.Options{
		Dialect: d, Writer: writer, Reader: reader, Lease: lease, Path: name, ReadOnly: o.ReadOnly,
		Close: func() error {
			var first error
			for i := len(handles) - 1; i >= 0; i-- {
				if err := handles[i](); err != nil && first == nil {
					first = err
				}
			}
			return first
		},
	})
	return &Store{Store: s, pool: pool, name: name}, nil
}

// textInByteOrder reports whether the database's default collation orders
// text byte by byte (libc's C or POSIX), as the index on runs.id then does.
// Any other collation, ICU's included, may not, and a prefix's range is
// then compared under COLLATE "C": right, at the cost of the index.
func textInByteOrder(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var provider, collate *string
	// to_jsonb reads datlocprovider where the server has it (15 and later)
	// and NULL before.
	err := pool.QueryRow(ctx, `SELECT to_jsonb(d)->>'datlocprovider', datcollate FROM pg_database d WHERE datname = current_database()`).Scan(&provider, &collate)
	if err != nil {
		return false, err
	}
	libc := provider == nil || *provider == "c"
	return libc && collate != nil && (*collate == "C" || *collate == "POSIX"), nil
}

const migrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version BIGINT PRIMARY KEY,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// migrationLock is the advisory lock key processes migrating one database
// take in turn ("agentrt" in ASCII).
const migrationLock = 0x6167656e747274

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// schemaVersion reads the newest applied migration: 0 when the database has
// no schema_migrations table.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var reg *string
	if err := q.QueryRow(ctx, "SELECT to_regclass('schema_migrations')::text").Scan(&reg); err != nil {
		return 0, err
	}
	if reg == nil {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v)
	return v, err
}

// migrate applies the missing migrations, each in its own transaction,
// under an advisory lock that serialises processes opening one database.
func migrate(ctx context.Context, pool *pgxpool.Pool, name string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("agentrt: postgres %s: %w", name, err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("agentrt: postgres %s: %w", name, err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	v, err := schemaVersion(ctx, conn)
	if err != nil {
		return fmt.Errorf("agentrt: postgres %s: %w", name, err)
	}
	if v > SchemaVersion {
		return &agentrt.SchemaVersionError{Path: name, Database: v, Build: SchemaVersion}
	}
	if v == 0 {
		// A database holding tables agentrt did not make is not ours to
		// migrate.
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
			AND tablename IN ('runs', 'steps', 'approvals', 'model_calls', 'tool_specs', 'events', 'chain_head')`).Scan(&n); err != nil {
			return fmt.Errorf("agentrt: postgres %s: %w", name, err)
		}
		if n > 0 {
			return errNotAgentrt(name)
		}
		if _, err := conn.Exec(ctx, migrationsTable); err != nil {
			return fmt.Errorf("agentrt: postgres %s: %w", name, err)
		}
	}
	for _, m := range ms {
		if m.Version <= v {
			continue
		}
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return fmt.Errorf("agentrt: postgres %s: migration %s: %w", name, m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m sqlstore.Migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", m.Version); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func errNotAgentrt(name string) error {
	return fmt.Errorf("agentrt: %s is not an agentrt database (it has no schema_migrations table): %w", name, agentrt.ErrSchemaVersion)
}
