package postgres_test

import (
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/enginetest"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// The engine's behaviour suite, as the root package runs it on SQLite, on
// the real cluster: each test a fresh schema, each open a store of its own.
func TestEngine_Suite(t *testing.T) {
	pgtest.DSN(t)
	enginetest.Exercise(t, func(t *testing.T) func(*testing.T) agentrt.Store {
		dsn := pgtest.Fresh(t)
		return func(t *testing.T) agentrt.Store { return open(t, dsn) }
	})
}
