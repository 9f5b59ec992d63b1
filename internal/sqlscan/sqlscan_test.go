package sqlscan

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // an unclosed result would hold the one connection
	if _, err := db.Exec(`CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func scanInt(s Scanner) (int, error) {
	var n int
	err := s.Scan(&n)
	return n, err
}

// All reads every row in order, hands on the query's own error, stops at
// the first scan error, and closes the result each time (with one
// connection, a result left open would block the next query).
func TestAll_ReadsInOrderAndStopsAtTheFirstError(t *testing.T) {
	db := openDB(t)
	rows, err := db.Query(`SELECT n FROM t ORDER BY n`)
	got, err := All(rows, err, scanInt)
	if err != nil || len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("All = %v, %v; want [1 2 3]", got, err)
	}
	rows, err = db.Query(`SELECT nope FROM t`)
	if _, err := All(rows, err, scanInt); err == nil {
		t.Fatal("a failed query's error was not handed on")
	}
	stop := errors.New("stop")
	rows, err = db.Query(`SELECT n FROM t ORDER BY n`)
	calls := 0
	_, err = All(rows, err, func(s Scanner) (int, error) { calls++; return 0, stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("All = %v after %d calls; want stop after 1", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("a query after All: %d, %v (was the result left open?)", n, err)
	}
}
