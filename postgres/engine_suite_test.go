package postgres_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for the suite's raw writes

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/enginetest"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// The engine's behaviour suite, every case the root package runs on SQLite,
// on the real cluster: each test a fresh schema, each open a store of its
// own, the raw writes of the tamper cases through database/sql.
func TestEngine_Suite(t *testing.T) {
	pgtest.DSN(t)
	enginetest.Exercise(t, enginetest.Backend{
		Name:  "postgres",
		Fresh: pgtest.Fresh,
		Open: func(ctx context.Context, dsn string) (agentrt.Store, error) {
			st, err := postgres.Open(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return st, nil
		},
		Raw:      func(dsn string) (*sql.DB, error) { return sql.Open("pgx", dsn) },
		Numbered: true,
	})
}
