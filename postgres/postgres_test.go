package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/agentrt/agentrt/storetest"
)

func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The conformance suite every backend runs, on a fresh schema each time.
func TestStore_Conformance(t *testing.T) {
	pgtest.DSN(t)
	storetest.Exercise(t, func(t *testing.T) agentrt.Store { return open(t, pgtest.Fresh(t)) })
}

// A database a newer build migrated is refused with both versions, and
// nothing is written to it; one with agentrt's table names but no version
// table is refused as not agentrt's.
func TestOpen_RefusesANewerSchemaAndAForeignOne(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Fresh(t)
	s := open(t, dsn)
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	for _, openFn := range []func() (*postgres.Store, error){
		func() (*postgres.Store, error) { return postgres.Open(ctx, dsn) },
		func() (*postgres.Store, error) { return postgres.OpenExisting(ctx, dsn, true) },
	} {
		_, err = openFn()
		var ve *agentrt.SchemaVersionError
		if !errors.As(err, &ve) || ve.Database != postgres.SchemaVersion+1 || ve.Build != postgres.SchemaVersion || !errors.Is(err, agentrt.ErrSchemaVersion) {
			t.Fatalf("open of a newer schema = %v, want a SchemaVersionError naming %d and %d", err, postgres.SchemaVersion+1, postgres.SchemaVersion)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != postgres.SchemaVersion+1 {
		t.Fatalf("schema_migrations has %d rows (%v) after the refusals, want %d", n, err, postgres.SchemaVersion+1)
	}

	foreign := pgtest.Fresh(t)
	fc, err := pgx.Connect(ctx, foreign)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close(ctx)
	if _, err := fc.Exec(ctx, "CREATE TABLE runs (id text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, foreign); !errors.Is(err, agentrt.ErrSchemaVersion) {
		t.Fatalf("open of a database with a foreign runs table = %v, want ErrSchemaVersion", err)
	}
	if err := fc.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the refused database has %d tables (%v), want its 1", n, err)
	}
	if _, err := postgres.OpenExisting(ctx, pgtest.Fresh(t), true); !errors.Is(err, agentrt.ErrSchemaVersion) {
		t.Fatalf("OpenExisting of an empty database = %v, want ErrSchemaVersion", err)
	}
}

// Processes that open one new database at once migrate it once.
func TestOpen_ConcurrentOpenersMigrateOnce(t *testing.T) {
	dsn := pgtest.Fresh(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Retention on Postgres: the suite the SQLite store runs.
func TestRetain_BoundedBatchesOnBothBackends(t *testing.T) {
	storetest.Retention(t, func(t *testing.T) agentrt.Store { return open(t, pgtest.Fresh(t)) })
}

// The chain head moves once per INSERT into events, however many rows the
// statement inserts (a group commit writes many to a statement), and ends
// at the statement's newest event; an insert of no rows leaves it alone.
// Migration 0007: the per-row trigger before it updated the head once a
// row.
func TestChainHead_MovesOncePerInsertStatement(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Fresh(t)
	open(t, dsn).Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO runs (id, status, created_at) VALUES ('r', 'RUNNING', 'now')"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (seq, run_id, at, type, payload_json, hash) VALUES
		(1, 'r', 'now', 't', '{}', 'h1'), (2, 'r', 'now', 't', '{}', 'h2'), (3, 'r', 'now', 't', '{}', 'h3')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (seq, run_id, at, type, payload_json, hash)
		SELECT 4, 'r', 'now', 't', '{}', 'h4' WHERE false`); err != nil {
		t.Fatal(err)
	}
	var seq, updates int64
	var hash string
	if err := tx.QueryRow(ctx, "SELECT seq, hash FROM chain_head").Scan(&seq, &hash); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relid = 'chain_head'::regclass").Scan(&updates); err != nil {
		t.Fatal(err)
	}
	if seq != 3 || hash != "h3" || updates != 1 {
		t.Fatalf("after one insert of 3 events and one of none: head (%d, %q) moved %d times; want (3, \"h3\") moved once", seq, hash, updates)
	}
}
