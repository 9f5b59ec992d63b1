// Package testrig holds what the tests of the packages above a store set
// up first: a fresh SQLite runs database, or one crafted from the
// migrations' text (enginekit, which the engine suite runs on every store,
// holds the clock they move by hand). It is for tests only; nothing else
// imports it.
package testrig

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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

// FillDB creates a runs database at path and runs fill in one transaction
// on it, committed when fill returns nil: for benchmarks that need many
// rows written fast, straight to the tables.
func FillDB(path string, fill func(ctx context.Context, tx *sql.Tx) error) error {
	st, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	tx, err := st.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fill(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// dbSuffixes name a SQLite database's files: itself, its WAL, its shm.
var dbSuffixes = []string{"", "-wal", "-shm"}

// DBFiles is what a SQLite database at path holds on disk: the file, its
// WAL and its shared-memory file, concatenated (a missing WAL or shm adds
// nothing), for a test that greps every byte stored for what must not be.
func DBFiles(t testing.TB, path string) []byte {
	t.Helper()
	byName := DBFilesByName(t, path)
	var all []byte
	for _, s := range dbSuffixes {
		all = append(all, byName[filepath.Base(path+s)]...)
	}
	return all
}

// DBFilesByName is DBFiles kept apart, by each file's base name (a
// missing one holds nothing), for a test that names the file a value was
// found in.
func DBFilesByName(t testing.TB, path string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, s := range dbSuffixes {
		b, err := os.ReadFile(path + s)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[filepath.Base(path+s)] = b
	}
	return out
}

// Migrations is the migration files in dir, in the order they apply; none
// fails t.
func Migrations(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations in %s: %d files, %v", dir, len(files), err)
	}
	sort.Strings(files)
	return files
}

// CraftDB writes, as a hostile author would, the runs database at path
// from the migrations' own text, for the tests (sqlite's, the CLI's) that
// check agentrt refuses a schema it did not write: the first migration
// passed through edit (when edit is not nil; an edit that changes nothing
// fails t), every later one as written, each recorded as applied in
// schema_migrations, then one running run r1, then the extra statements.
// The file is left owner-only, as agentrt requires.
func CraftDB(t testing.TB, path string, migrations []string, edit func(string) string, extra ...string) {
	t.Helper()
	ddl, err := os.ReadFile(migrations[0])
	if err != nil {
		t.Fatal(err)
	}
	text := string(ddl)
	if edit != nil {
		if text = edit(text); text == string(ddl) {
			t.Fatal("the edit changed nothing")
		}
	}
	stmts := []string{"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)", text}
	for _, f := range migrations[1:] {
		later, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(later))
	}
	for v := 1; v <= len(migrations); v++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO schema_migrations (version, applied_at) VALUES (%d, '2026-01-01T00:00:00Z')", v))
	}
	stmts = append(stmts, `INSERT INTO runs (id, status, created_at) VALUES ('r1', 'RUNNING', '2026-01-01T00:00:00Z')`)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append(stmts, extra...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Exec runs the binary bin with args, in this process's environment plus
// env, and returns what it printed and its exit status; a binary that
// cannot be run fails t.
func Exec(t testing.TB, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// Golden checks got against the golden file at path: it fails t, naming
// the first line that differs, unless the file holds exactly got. Under
// update it writes got to path instead, creating the directory.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (run with -update and review the diff):\n%s", path, firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first line where want and got differ, each quoted
// and cut at 300 bytes.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d\nwant: %+.300q\ngot:  %+.300q", i+1, w, g)
		}
	}
	return ""
}
