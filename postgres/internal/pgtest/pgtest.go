// Package pgtest gives the postgres module's tests a database: the cluster
// named by TEST_PG_DSN (scripts/pg-test.sh starts one), with a fresh schema
// per test. Without TEST_PG_DSN a test skips with a line saying how to get
// a cluster, except under CI=true, where it fails: CI always runs them.
package pgtest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/token"
)

// How is the line a skipped test prints.
const How = "no PostgreSQL: set TEST_PG_DSN, or run `make test` or `scripts/pg-test.sh run -- go test ./...`, which start a throwaway cluster"

// DSN returns the cluster's DSN, or skips (fails under CI) without one.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TEST_PG_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but TEST_PG_DSN is unset: .ci/run must start the cluster (" + How + ")")
		}
		t.Skip(How)
	}
	return dsn
}

// Fresh creates an empty schema for the test, dropped when it ends, and
// returns a DSN whose search_path names it.
func Fresh(t testing.TB) string {
	t.Helper()
	base := DSN(t)
	schema := "t_" + token.Hex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to TEST_PG_DSN: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return // the cluster is gone with the script
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return WithSchema(t, base, schema)
}

// WithSchema returns dsn with its search_path set to schema.
func WithSchema(t testing.TB, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Fatalf("TEST_PG_DSN must be a postgres:// URL, got %q", dsn)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
