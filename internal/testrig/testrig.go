// Package testrig holds what the tests of the packages above a store set
// up first: a fresh SQLite runs database (enginekit, which the engine
// suite runs on every store, holds the clock they move by hand). It is for
// tests only; nothing else imports it.
package testrig

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/sqlite"
)

// DB creates a runs database in a fresh temporary directory, closed when t
// ends, and returns the writer's store and the file's path.
func DB(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}
