package testrig_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
)

// DB is an open, empty runs database in its own directory.
func TestRig_FreshDatabase(t *testing.T) {
	st, path := testrig.DB(t)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if runs, err := st.ListRuns(context.Background()); err != nil || len(runs) != 0 {
		t.Fatalf("a fresh database lists %v, %v", runs, err)
	}
}

// A database crafted from the migrations as written, at this build's
// version, is one agentrt opens, holding run r1 and what the extra
// statements added; an edit changes the first migration's text.
func TestRig_CraftedDatabase(t *testing.T) {
	files := testrig.Migrations(t, "../../sqlite/migrations")
	if len(files) != sqlite.SchemaVersion {
		t.Fatalf("%d migrations, schema version %d", len(files), sqlite.SchemaVersion)
	}
	path := filepath.Join(t.TempDir(), "runs.db")
	testrig.CraftDB(t, path, files, nil, `INSERT INTO runs (id, status, created_at) VALUES ('r2', 'RUNNING', '2026-01-01T00:00:00Z')`)
	st, err := sqlite.OpenExisting(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background())
	if err != nil || len(runs) != 2 {
		t.Fatalf("the crafted database lists %v, %v; want r1 and r2", runs, err)
	}
	edited := filepath.Join(t.TempDir(), "edited.db")
	testrig.CraftDB(t, edited, files, func(ddl string) string { return ddl + "\nCREATE TABLE extra (x INTEGER);" })
	if st, err := sqlite.OpenExisting(edited, true); err == nil {
		st.Close()
		t.Fatal("a database with a table agentrt did not write was opened")
	}
}

// recorder is a testing.TB that keeps what Errorf was handed.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Under update Golden writes the file, creating its directory; the same
// bytes then pass, and other bytes fail naming the first differing line,
// quoted.
func TestGolden_NamesTheFirstLineThatDiffers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata", "out.golden")
	testrig.Golden(t, path, []byte("one\ntwo\nthree\n"), true)
	r := &recorder{TB: t}
	testrig.Golden(r, path, []byte("one\ntwo\nthree\n"), false)
	if len(r.errs) != 0 {
		t.Fatalf("the same bytes failed: %q", r.errs)
	}
	testrig.Golden(r, path, []byte("one\ntw\x1bo\nthree\n"), false)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "line 2\nwant: \"two\"\ngot:  \"tw\\x1bo\"") {
		t.Fatalf("a changed line reported as %q", r.errs)
	}
}
