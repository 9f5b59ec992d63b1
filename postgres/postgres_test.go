package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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

// openPair opens two stores on one fresh schema, as two processes would,
// and closes them when the test ends. It returns the schema's dsn too.
func openPair(t *testing.T) (dsn string, a, b *postgres.Store) {
	t.Helper()
	dsn = pgtest.Fresh(t)
	a, b = open(t, dsn), open(t, dsn)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return dsn, a, b
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

// Commits of different runs share no row: while one writer's transaction
// of run a is open (it has begun and appended), another process commits
// run b without waiting for it. Before per-run chains every transaction
// locked the one chain_head row first, so b waited for a's commit.
func TestChain_CommitsOfDifferentRunsShareNoRow(t *testing.T) {
	ctx := context.Background()
	_, a, b := openPair(t)
	for _, r := range []struct {
		s  *postgres.Store
		id string
	}{{a, "a"}, {b, "b"}} {
		if _, err := r.s.Update(ctx, func(tx agentrt.Tx) error { return insertRun(tx, r.id) }); err != nil {
			t.Fatal(err)
		}
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Update(ctx, func(tx agentrt.Tx) error {
			if _, err := tx.EventAppend(agentrt.Event{RunID: "a", At: t0, Type: agentrt.EventRunStarted}); err != nil {
				return err
			}
			if err := tx.RunUpdate(agentrt.RunUpdate{ID: "a", AddCalls: 1}); err != nil {
				return err
			}
			once.Do(func() { close(inside); <-release })
			return nil
		})
		aDone <- err
	}()
	<-inside
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second) // under the server's 5 s idle-in-transaction bound
	defer cancel()
	bDone := make(chan error, 1)
	go func() {
		_, err := b.Update(bctx, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: "b", At: t0, Type: agentrt.EventRunStarted})
			return err
		})
		bDone <- err
	}()
	select {
	case err := <-bDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-bctx.Done():
		close(release)
		<-aDone
		<-bDone
		t.Fatal("run b's commit waited on run a's open transaction")
	}
	close(release)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if rep, err := a.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() || rep.Checked != 2 {
		t.Fatalf("VerifyEvents = %+v, %v; want 2 events intact", rep, err)
	}
}

// Two processes appending to one run at once (a worker and an operator's
// command) both commit: the one whose head went stale while it was open
// collides on the run's next place, runs again on the new head, and the
// run's chain holds places 1, 2, 3 in seq order and verifies.
func TestChain_TwoWritersOfOneRunBothCommitInOrder(t *testing.T) {
	ctx := context.Background()
	dsn, a, b := openPair(t)
	if _, err := a.Update(ctx, func(tx agentrt.Tx) error {
		if err := insertRun(tx, "r"); err != nil {
			return err
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: "r", At: t0, Type: agentrt.EventRunCreated})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	attempts := 0
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Update(ctx, func(tx agentrt.Tx) error {
			attempts++
			if _, err := tx.EventAppend(agentrt.Event{RunID: "r", At: t0, Type: agentrt.EventRunStarted}); err != nil {
				return err
			}
			once.Do(func() { close(inside); <-release })
			return nil
		})
		aDone <- err
	}()
	<-inside
	if _, err := b.Update(ctx, func(tx agentrt.Tx) error {
		_, err := tx.EventAppend(agentrt.Event{RunID: "r", At: t0, Type: agentrt.EventApprovalDecided})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if attempts < 2 {
		t.Fatalf("the stale writer ran %d time(s); its first attempt should have collided", attempts)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT type, run_seq FROM events WHERE run_id = 'r' ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var typ string
		var n int64
		if err := rows.Scan(&typ, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s", n, typ))
	}
	if want := "[1 run.created 2 approval.decided 3 run.started]"; fmt.Sprint(got) != want {
		t.Fatalf("run r's chain in seq order = %v, want %s", got, want)
	}
	if rep, err := b.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() || rep.Checked != 3 {
		t.Fatalf("VerifyEvents = %+v, %v; want 3 events intact", rep, err)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func insertRun(tx agentrt.Tx, id string) error {
	return tx.RunInsert(agentrt.Run{ID: id, Status: agentrt.RunRunning, CreatedAt: t0})
}
