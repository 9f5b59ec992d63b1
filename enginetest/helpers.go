package enginetest

import (
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// openStore opens a store on a fresh database of the backend.
func openStore(t testing.TB, b *Backend) agentrt.Store {
	t.Helper()
	return b.fresh(t).open(t)
}

// env is one test's database, store, clock and observer.
type env struct {
	*kit.Env
	db *database
}

func newEnv(t testing.TB, b *Backend) *env {
	d := b.fresh(t)
	return &env{Env: kit.NewEnv(t, d.open(t)), db: d}
}
