package agentrt_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/enginetest"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// The root package's tests share internal/enginekit's helpers with the
// engine suite (a clock moved by hand, tools that count their executions,
// readers of what was stored); what is here reaches a SQLite file directly.

// openStore opens a fresh SQLite file in t.TempDir().
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// inCrashChild runs child and reports true when this process is the child
// a crash test started (childEnv is set); in the parent it skips under
// -short, since the test starts a child process, and reports false.
func inCrashChild(t *testing.T, childEnv string, child func(*testing.T)) bool {
	t.Helper()
	if os.Getenv(childEnv) != "" {
		child(t)
		return true
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	return false
}

// openAt opens the SQLite file at path, creating it if need be; the caller
// closes it, as a process ends.
func openAt(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// reopen opens a second store on the same file, as a second process would.
func reopen(t testing.TB, st *sqlite.Store) *sqlite.Store {
	t.Helper()
	st2, err := sqlite.Open(st.Path())
	if err != nil {
		t.Fatalf("sqlite.Open second handle: %v", err)
	}
	t.Cleanup(func() { st2.Close() })
	return st2
}

// rawDB opens a plain database/sql handle on the store's file, outside the
// store, for edits the runtime would never make.
func rawDB(t testing.TB, st *sqlite.Store) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file://"+st.Path()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// takeSnapshot is every row of every table of st, as text.
func takeSnapshot(t testing.TB, st *sqlite.Store) map[string][]string {
	t.Helper()
	return enginetest.Snapshot(t, st.DB())
}

// requireUnchanged fails unless the store holds exactly what before held.
func requireUnchanged(t testing.TB, st *sqlite.Store, before map[string][]string, what string) {
	t.Helper()
	enginetest.RequireUnchanged(t, st.DB(), before, what)
}

// column reads one text column of one row.
func column(t testing.TB, st *sqlite.Store, q string, args ...any) string {
	t.Helper()
	var s string
	if err := st.DB().QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// countRows counts the rows a query selects.
func countRows(t testing.TB, st *sqlite.Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := st.DB().QueryRow("SELECT COUNT(*) FROM ("+q+")", args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// env is one test's SQLite store, clock and observer.
type env struct {
	*kit.Env
	store *sqlite.Store
}

func newEnv(t testing.TB) *env {
	st := openStore(t)
	return &env{Env: kit.NewEnv(t, st), store: st}
}
