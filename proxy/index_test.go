package proxy

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// The index is created owner-only, migrated forward, and a file written
// by a newer build, or holding a trigger or a view, is refused before
// anything is written to it.
func TestIndex_MigratesForwardAndRefusesANewerOrCraftedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.db.proxy")
	ix, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	fi, _ := os.Stat(path)
	mustf(t, fi.Mode().Perm() == 0o600, "mode %v", fi.Mode())
	if ix, err = OpenIndex(path); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	ix.Close()

	craft := func(stmt string) string {
		p := filepath.Join(t.TempDir(), "x.proxy")
		ix, err := OpenIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		ix.Close()
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
		db.Close()
		return p
	}
	newer := craft(`INSERT INTO proxy_schema_migrations (version, applied_at) VALUES (99, 0)`)
	before, _ := os.ReadFile(newer)
	_, err = OpenIndex(newer)
	after, _ := os.ReadFile(newer)
	mustf(t, string(before) == string(after), "the refused file was changed")
	var se *IndexSchemaError
	mustf(t, errors.As(err, &se) && se.Index == 99 && se.Build == IndexSchemaVersion && errors.Is(err, ErrIndexSchema), "newer: %v", err)
	trig := craft(`CREATE TRIGGER t AFTER INSERT ON proxy_calls BEGIN DELETE FROM proxy_calls; END`)
	_, err = OpenIndex(trig)
	mustf(t, errors.Is(err, ErrIndexSchema), "trigger: %v", err)
	view := craft(`CREATE VIEW v AS SELECT 1`)
	_, err = OpenIndex(view)
	mustf(t, errors.Is(err, ErrIndexSchema), "view: %v", err)

	if err := os.Chmod(path, 0o660); err != nil {
		t.Fatal(err)
	}
	_, err = OpenIndex(path)
	mustf(t, errors.Is(err, agentrt.ErrInsecureMode), "group-writable: %v", err)
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link.proxy")
	os.Symlink(path, link)
	_, err = OpenIndex(link)
	mustf(t, errors.Is(err, agentrt.ErrSymlink), "link: %v", err)
}
