package testrig_test

import (
	"context"
	"os"
	"path/filepath"
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
