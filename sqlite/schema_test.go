package sqlite_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// craft writes, as a hostile author would, a version-1 database from the
// migration's own text with edit applied to it, plus the extra statements,
// and one run. With edit and extra empty the file is an honest database.
func craft(t *testing.T, path string, edit func(string) string, extra ...string) {
	t.Helper()
	craftAt(t, path, sqlite.SchemaVersion, edit, extra...)
}

// craftAt is craft at an older schema version: migrations 1 to version.
func craftAt(t *testing.T, path string, version int, edit func(string) string, extra ...string) {
	t.Helper()
	files := testrig.Migrations(t, "migrations")
	if len(files) < version {
		t.Fatalf("%d migrations, want at least %d", len(files), version)
	}
	testrig.CraftDB(t, path, files[:version], edit, extra...)
}

// replace returns an edit that swaps one definition of the migration for
// another.
func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// A file whose schema is anything but the one the migrations create is
// refused by every open, naming the first object that differs: a generated
// column, a CHECK constraint, a DEFAULT expression and an expression index
// are author SQL as much as a trigger is, and a missing or extra object is
// not the schema either.
func TestStore_RefusesAnySchemaButTheMigrations(t *testing.T) {
	// The author's expression; the binary test gives it a size that shows.
	const huge = "printf('%.*c', 1000, 'g')"
	for _, c := range []struct {
		name     string
		edit     func(string) string
		extra    []string
		typ, obj string
		diff     agentrt.SchemaDifference
	}{
		{name: "generated column", edit: replace("goal TEXT NOT NULL DEFAULT '',", "goal TEXT GENERATED ALWAYS AS ("+huge+") VIRTUAL,"),
			typ: "table", obj: "runs", diff: agentrt.SchemaAltered},
		{name: "check constraint", edit: replace("status TEXT NOT NULL,\n\treason", "status TEXT NOT NULL CHECK (length("+huge+") > 0),\n\treason"),
			typ: "table", obj: "runs", diff: agentrt.SchemaAltered},
		{name: "default expression", edit: replace("decided_by TEXT NOT NULL DEFAULT '',", "decided_by TEXT NOT NULL DEFAULT ("+huge+"),"),
			typ: "table", obj: "approvals", diff: agentrt.SchemaAltered},
		{name: "expression index", extra: []string{"CREATE INDEX evil ON runs (CASE status WHEN 'RUNNING' THEN '' ELSE " + huge + " END)"},
			typ: "index", obj: "evil", diff: agentrt.SchemaExtra},
		{name: "extra table", extra: []string{"CREATE TABLE extra (x TEXT)"},
			typ: "table", obj: "extra", diff: agentrt.SchemaExtra},
		{name: "statistics", extra: []string{"ANALYZE"},
			typ: "table", obj: "sqlite_stat1", diff: agentrt.SchemaExtra},
		{name: "missing index", edit: replace("CREATE INDEX approvals_run ON approvals (run_id);", ""),
			typ: "index", obj: "approvals_run", diff: agentrt.SchemaMissing},
		{name: "altered migrations table", extra: []string{"ALTER TABLE schema_migrations ADD COLUMN x TEXT GENERATED ALWAYS AS (" + huge + ") VIRTUAL"},
			typ: "table", obj: "schema_migrations", diff: agentrt.SchemaAltered},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "crafted.db")
			craft(t, p, c.edit, c.extra...)
			for name, open := range opens(p) {
				st, err := open()
				if err == nil {
					st.Close()
					t.Fatalf("%s opened a database whose %s %q is not the migrations'", name, c.typ, c.obj)
				}
				var ue *agentrt.UnsafeSchemaError
				if !errors.Is(err, agentrt.ErrUnsafeSchema) || !errors.As(err, &ue) {
					t.Fatalf("%s: %v, want ErrUnsafeSchema", name, err)
				}
				if ue.Path != p || ue.Type != c.typ || ue.Name != c.obj || ue.Difference != c.diff {
					t.Fatalf("%s: refused %+v, want the %s %q (%s)", name, *ue, c.typ, c.obj, c.diff)
				}
				if msg := err.Error(); strings.Count(msg, ". ") > 0 || !strings.Contains(msg, fmt.Sprintf("%q", c.obj)) {
					t.Fatalf("%s: the message is not one sentence naming %q: %s", name, c.obj, msg)
				}
			}
		})
	}
	// The same file crafted with no edit is an honest database, so the
	// refusals above are for the edits and nothing else.
	p := filepath.Join(t.TempDir(), "honest.db")
	craft(t, p, nil)
	for name, open := range opens(p) {
		st, err := open()
		if err != nil {
			t.Fatalf("%s refused an honest database: %v", name, err)
		}
		st.Close()
	}
}

// opens is every way to open an existing database.
func opens(p string) map[string]func() (*sqlite.Store, error) {
	return map[string]func() (*sqlite.Store, error){
		"Open":                  func() (*sqlite.Store, error) { return sqlite.Open(p) },
		"OpenExisting readonly": func() (*sqlite.Store, error) { return sqlite.OpenExisting(p, true) },
		"OpenExisting writable": func() (*sqlite.Store, error) { return sqlite.OpenExisting(p, false) },
	}
}

// fileState is what a refused open must leave alone: the bytes, the mode,
// and the owner. The sidecars are not in it: a read-only open of a WAL
// database may leave a -wal and -shm, as SQLite's readers do.
type fileState struct {
	sum        [32]byte
	mode       os.FileMode
	uid, gid   uint32
	size       int64
	journalHdr string
}

func ownerOf(t *testing.T, fi os.FileInfo) (uid, gid uint32) {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("file owners are not reported here")
	}
	return st.Uid, st.Gid
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	s := fileState{sum: sha256.Sum256(b), mode: fi.Mode(), size: fi.Size()}
	s.uid, s.gid = ownerOf(t, fi)
	if len(b) >= 20 {
		s.journalHdr = fmt.Sprintf("%d/%d", b[18], b[19]) // 1/1 rollback, 2/2 WAL
	}
	return s
}

// A refused file is left exactly as it was: no open writes to it, switches
// its journal mode or tightens its mode before deciding to refuse it.
func TestOpen_RefusedFileIsUnchanged(t *testing.T) {
	otherApp := func(t *testing.T, p string) {
		db := raw(t, p)
		if _, err := db.Exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('mine')"); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	agentrtDB := func(tamper string) func(*testing.T, string) {
		return func(t *testing.T, p string) {
			s, err := sqlite.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			writeSomething(t, s)
			s.Close()
			db := raw(t, p)
			if _, err := db.Exec(tamper); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}
	}
	for _, c := range []struct {
		name    string
		make    func(*testing.T, string)
		mode    os.FileMode
		fresh   bool // Open takes it as a new database, which is not a refusal
		wantErr error
	}{
		{name: "empty file", make: func(*testing.T, string) {}, mode: 0o600, fresh: true, wantErr: agentrt.ErrSchemaVersion},
		{name: "another application's file in delete mode", make: otherApp, mode: 0o600, wantErr: agentrt.ErrSchemaVersion},
		{name: "newer version", make: agentrtDB(fmt.Sprintf("INSERT INTO schema_migrations (version, applied_at) VALUES (%d, 'x')", sqlite.SchemaVersion+1)), mode: 0o600, wantErr: agentrt.ErrSchemaVersion},
		{name: "unsafe schema", make: agentrtDB("CREATE TABLE extra (x TEXT)"), mode: 0o600, wantErr: agentrt.ErrUnsafeSchema},
		{name: "another application's file others can read", make: otherApp, mode: 0o644, wantErr: agentrt.ErrSchemaVersion},
		{name: "newer version others can read", make: agentrtDB(fmt.Sprintf("INSERT INTO schema_migrations (version, applied_at) VALUES (%d, 'x')", sqlite.SchemaVersion+1)), mode: 0o644, wantErr: agentrt.ErrSchemaVersion},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "runs.db")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			c.make(t, p)
			if err := os.Chmod(p, c.mode); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, p)
			for name, open := range opens(p) {
				if c.fresh && name == "Open" {
					continue
				}
				st, err := open()
				if err == nil {
					st.Close()
					t.Fatalf("%s opened it", name)
				}
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("%s: %v, want %v", name, err, c.wantErr)
				}
				if after := stateOf(t, p); after != before {
					t.Fatalf("%s refused the file but changed it:\nbefore %+v\nafter  %+v", name, before, after)
				}
			}
		})
	}
}
