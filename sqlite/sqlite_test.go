package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/storetest"
)

func openTemp(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentrt.db")
	s, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// The behavioural suite every backend runs.
func TestStore_Conformance(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) agentrt.Store {
		s, _ := openTemp(t)
		return s
	})
}

// raw opens a plain handle on the file, as another program would.
func raw(t *testing.T, path string) *sql.DB { return rawB(t, path) }

func rawB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// closedStoreFile makes a store with a run in it and closes it; it returns
// the database's path and the path of the file named by suffix ("" for the
// database itself, "-wal" for its log, made empty and owner-only when the
// close removed it).
func closedStoreFile(t *testing.T, suffix string) (db, file string) {
	t.Helper()
	s, p := openTemp(t)
	writeSomething(t, s)
	s.Close()
	f := p + suffix
	if suffix != "" {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p, f
}

func writeSomething(t *testing.T, s *sqlite.Store) {
	t.Helper()
	_, err := s.Update(context.Background(), func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: "r1", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()}); err != nil {
			return err
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: time.Now(), Type: agentrt.EventRunCreated})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Under umask 0 a new database and its WAL sidecars are still 0600.
func TestStore_FilesAreOwnerOnlyUnderAnyUmask(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o077} {
		t.Run(fmt.Sprintf("umask%03o", mask), func(t *testing.T) {
			old := syscall.Umask(mask)
			defer syscall.Umask(old)
			s, p := openTemp(t)
			defer s.Close()
			writeSomething(t, s)
			for _, f := range []string{p, p + "-wal", p + "-shm"} {
				if m := mode(t, f); m != 0o600 {
					t.Errorf("%s has mode %04o, want 0600", filepath.Base(f), m)
				}
			}
		})
	}
}

// The same, in a child process whose umask was set before it started, so no
// state of this process can hide a mode the kernel chose.
func TestStore_ModesInAChildProcess(t *testing.T) {
	if p := os.Getenv("AGENTRT_CHILD_DB"); p != "" {
		s, err := sqlite.Open(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		writeSomething(t, s)
		s.Close()
		os.Exit(0)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "child.db")
	cmd := exec.Command("/bin/sh", "-c", "umask 000 && exec \"$0\" -test.run '^TestStore_ModesInAChildProcess$'", os.Args[0])
	cmd.Env = append(os.Environ(), "AGENTRT_CHILD_DB="+p)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, f := range []string{p, p + "-wal", p + "-shm"} {
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			continue // the child checkpointed and removed it on close
		}
		if m := mode(t, f); m != 0o600 {
			t.Errorf("%s made by a umask-000 child has mode %04o, want 0600", filepath.Base(f), m)
		}
	}
}

func TestStore_RefusesADatabaseOthersCanWrite(t *testing.T) {
	for _, target := range []string{"", "-wal"} {
		t.Run("file"+target, func(t *testing.T) {
			p, f := closedStoreFile(t, target)
			if err := os.Chmod(f, 0o666); err != nil {
				t.Fatal(err)
			}
			for name, open := range map[string]func() (*sqlite.Store, error){
				"Open":                  func() (*sqlite.Store, error) { return sqlite.Open(p) },
				"OpenExisting readonly": func() (*sqlite.Store, error) { return sqlite.OpenExisting(p, true) },
				"OpenExisting writable": func() (*sqlite.Store, error) { return sqlite.OpenExisting(p, false) },
			} {
				st, err := open()
				if err == nil {
					st.Close()
					t.Fatalf("%s opened a file others can write", name)
				}
				var ie *agentrt.InsecureModeError
				if !errors.Is(err, agentrt.ErrInsecureMode) || !errors.As(err, &ie) || ie.Path != f {
					t.Fatalf("%s: %v, want ErrInsecureMode naming %s", name, err, f)
				}
				if !strings.Contains(err.Error(), "chmod 600") {
					t.Fatalf("%s: the message does not say the fix: %v", name, err)
				}
			}
			if m := mode(t, f); m != 0o666 {
				t.Fatalf("a refused open changed the mode to %04o", m)
			}
		})
	}
}

func TestStore_TightensADatabaseOthersCanRead(t *testing.T) {
	s, p := openTemp(t)
	writeSomething(t, s)
	s.Close()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlite.OpenExisting(p, true)
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if m := mode(t, p); m != 0o644 {
		t.Fatalf("a read-only open changed the mode to %04o", m)
	}
	w, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if m := mode(t, p); m != 0o600 {
		t.Fatalf("a writer left mode %04o, want 0600", m)
	}
}

func TestStore_RefusesTriggersAndViewsAndHardensItsConnections(t *testing.T) {
	for _, ddl := range []string{
		"CREATE TRIGGER evil AFTER INSERT ON events BEGIN DELETE FROM runs; END",
		"CREATE VIEW evil AS SELECT * FROM runs",
		"CREATE TEMP VIEW harmless AS SELECT 1", // temp objects do not persist: the file stays safe
	} {
		s, p := openTemp(t)
		writeSomething(t, s)
		s.Close()
		db := raw(t, p)
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		db.Close()
		persists := !strings.Contains(ddl, "TEMP")
		for name, open := range map[string]func() (*sqlite.Store, error){
			"Open":         func() (*sqlite.Store, error) { return sqlite.Open(p) },
			"OpenExisting": func() (*sqlite.Store, error) { return sqlite.OpenExisting(p, true) },
		} {
			st, err := open()
			if !persists {
				if err != nil {
					t.Fatalf("%s refused a database without a stored trigger or view: %v", name, err)
				}
				st.Close()
				continue
			}
			if err == nil {
				st.Close()
				t.Fatalf("%s opened a database holding %q", name, ddl)
			}
			var ue *agentrt.UnsafeSchemaError
			if !errors.Is(err, agentrt.ErrUnsafeSchema) || !errors.As(err, &ue) || ue.Name != "evil" {
				t.Fatalf("%s: %v, want ErrUnsafeSchema naming evil", name, err)
			}
		}
	}
	// Every connection runs with trusted_schema off and defensive mode on.
	s, _ := openTemp(t)
	defer s.Close()
	var trusted int
	if err := s.DB().QueryRow("PRAGMA trusted_schema").Scan(&trusted); err != nil || trusted != 0 {
		t.Fatalf("trusted_schema = %d, %v; want 0", trusted, err)
	}
	var sync int
	if err := s.DB().QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous = %d, %v; want 2 (FULL)", sync, err)
	}
	var jm string
	if err := s.DB().QueryRow("PRAGMA journal_mode").Scan(&jm); err != nil || jm != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", jm, err)
	}
	conn, err := s.DB().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.ExecContext(context.Background(), "PRAGMA writable_schema=ON")
	if _, err := conn.ExecContext(context.Background(), "UPDATE sqlite_master SET sql = 'x' WHERE name = 'runs'"); err == nil {
		t.Fatal("defensive mode is off: sqlite_master was writable")
	}
}

func TestOpenExisting_RefusesASymbolicLink(t *testing.T) {
	s, p := openTemp(t)
	writeSomething(t, s)
	s.Close()
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{true, false} {
		st, err := sqlite.OpenExisting(link, ro)
		if err == nil {
			st.Close()
			t.Fatal("OpenExisting followed a symbolic link")
		}
		var se *agentrt.InsecureModeError
		if !errors.Is(err, agentrt.ErrSymlink) || !errors.As(err, &se) || se.Problem != agentrt.FileSymlink || se.Path != link {
			t.Fatalf("OpenExisting(link) = %v, want ErrSymlink", err)
		}
	}
	// A directory or a missing file is not a database either, and nothing is created.
	if _, err := sqlite.OpenExisting(t.TempDir(), true); err == nil {
		t.Fatal("OpenExisting opened a directory")
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	if _, err := sqlite.OpenExisting(missing, false); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("OpenExisting(missing) = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("OpenExisting created a file")
	}
}

// A database of another schema version is refused with both versions.
func TestOpen_RefusesANewerDatabase(t *testing.T) {
	s, p := openTemp(t)
	s.Close()
	db := raw(t, p)
	if _, err := db.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'x')", sqlite.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, open := range map[string]func() (*sqlite.Store, error){
		"Open":         func() (*sqlite.Store, error) { return sqlite.Open(p) },
		"OpenExisting": func() (*sqlite.Store, error) { return sqlite.OpenExisting(p, true) },
	} {
		_, err := open()
		var ve *agentrt.SchemaVersionError
		if !errors.As(err, &ve) || !errors.Is(err, agentrt.ErrSchemaVersion) || ve.Database != sqlite.SchemaVersion+1 || ve.Build != sqlite.SchemaVersion {
			t.Fatalf("%s: %v, want SchemaVersionError with both versions", name, err)
		}
		if !strings.Contains(err.Error(), "newer") {
			t.Fatalf("%s: message does not say which side is newer: %v", name, err)
		}
	}
}

func appendEvents(t *testing.T, s *sqlite.Store, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := s.Update(context.Background(), func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: time.Unix(int64(i), 0), Type: agentrt.EventStepStarted,
				Payload: json.RawMessage(fmt.Sprintf(`{"index":%d}`, i))})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Altering, deleting or reordering an event is found at the first event that
// no longer chains.
func TestVerifyEvents_FindsTheFirstAlteredEvent(t *testing.T) {
	for _, c := range []struct {
		name    string
		tamper  string
		wantSeq int64
	}{
		{"payload", `UPDATE events SET payload_json = '{"index":99}' WHERE seq = 5`, 5},
		{"type", `UPDATE events SET type = 'run.finished' WHERE seq = 7`, 7},
		{"time", `UPDATE events SET at = '2000-01-01T00:00:00Z' WHERE seq = 3`, 3},
		{"deleted", `DELETE FROM events WHERE seq = 6`, 7},
		{"reordered", `UPDATE events SET payload_json = CASE seq WHEN 4 THEN (SELECT payload_json FROM events WHERE seq = 8) ELSE (SELECT payload_json FROM events WHERE seq = 4) END WHERE seq IN (4, 8)`, 4},
		{"first deleted", `DELETE FROM events WHERE seq = 1`, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, p := openTemp(t)
			writeSomething(t, s)
			appendEvents(t, s, 10)
			ctx := context.Background()
			rep, err := s.VerifyEvents(ctx, 0, 0)
			if err != nil || !rep.Intact() || rep.Checked != 11 {
				t.Fatalf("before tampering: %+v %v", rep, err)
			}
			db := raw(t, p)
			if _, err := db.Exec(c.tamper); err != nil {
				t.Fatal(err)
			}
			rep, err = s.VerifyEvents(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Intact() || rep.Break.Seq != c.wantSeq {
				t.Fatalf("verify after %s = %+v, want a break at %d", c.name, rep.Break, c.wantSeq)
			}
			s.Close()
		})
	}
}

// A chain cut at its end verifies on its own; only a head kept elsewhere
// catches it.
func TestVerifyEvents_CutEndIsCaughtOnlyAgainstAKeptHead(t *testing.T) {
	s, p := openTemp(t)
	defer s.Close()
	writeSomething(t, s)
	appendEvents(t, s, 10)
	ctx := context.Background()
	keptSeq, keptHash, err := s.ChainHead(ctx)
	if err != nil || keptSeq != 11 {
		t.Fatalf("head = %d %v", keptSeq, err)
	}
	db := raw(t, p)
	if _, err := db.Exec("DELETE FROM events WHERE seq > 8"); err != nil {
		t.Fatal(err)
	}
	rep, err := s.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() || rep.Checked != 8 {
		t.Fatalf("a cut chain should verify on its own: %+v %v", rep, err)
	}
	seq, head, _ := s.ChainHead(ctx)
	if seq == keptSeq || head == keptHash {
		t.Fatal("the cut went unnoticed against the kept head")
	}
	if _, err := s.EventHash(ctx, keptSeq); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("the kept head's event is still there: %v", err)
	}
	// The next event after a cut does not reuse the cut seqs: the gap shows.
	appendEvents(t, s, 1)
	rep, err = s.VerifyEvents(ctx, 0, 0)
	if err != nil || rep.Intact() {
		t.Fatalf("an event appended after a cut should show the gap: %+v %v", rep, err)
	}
}

// Page reads return one page, every text column capped, totals from COUNT.
func TestStore_PagesAreBounded(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	ctx := context.Background()
	big := strings.Repeat("é", agentrt.MaxPageText) // 2 bytes each
	_, err := s.Update(ctx, func(tx agentrt.Tx) error {
		for i := 0; i < 30; i++ {
			r := agentrt.Run{ID: fmt.Sprintf("r%02d", i), Goal: big, Status: agentrt.RunCompleted, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now(), ReasonDetail: big}
			if err := tx.RunInsert(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runs, total, err := s.ListRunsPage(ctx, 7, 20)
	if err != nil {
		t.Fatal(err)
	}
	if total != 30 || len(runs) != 7 {
		t.Fatalf("page = %d runs of %d", len(runs), total)
	}
	for _, r := range runs {
		for _, f := range []string{r.Goal, r.ReasonDetail} {
			if len(f) > agentrt.MaxPageText+64 || !strings.Contains(f, "truncated") || !json.Valid([]byte(fmt.Sprintf("%q", f))) {
				t.Fatalf("field of %d bytes is not capped", len(f))
			}
		}
	}
	runs, _, err = s.ListRunsPage(ctx, 10, 29)
	if err != nil || len(runs) != 1 || runs[0].ID != "r00" {
		t.Fatalf("last page = %v %v", runIDs(runs), err)
	}
}

func runIDs(rs []agentrt.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// Rows of tens of MB each: a page read allocates the page, not the rows.
func TestRead_OnlyThePageIsReadFromAHugeDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~200 MB")
	}
	s, p := openTemp(t)
	defer s.Close()
	writeSomething(t, s)
	db := raw(t, p)
	const rows, size = 4, 16 << 20
	for i := 0; i < rows; i++ {
		id := fmt.Sprintf("huge%d", i)
		if _, err := db.Exec(`INSERT INTO runs (id, goal, status, limits_json, created_at, result_json, reason_detail) VALUES (?, printf('%.*c', ?, 'g'), 'COMPLETED', '{}', '2026-01-01T00:00:00Z', '"' || printf('%.*c', ?, 'r') || '"', printf('%.*c', ?, 'd'))`, id, size, size, size); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO steps (id, run_id, idx, status, decision_json, started_at) VALUES (?, ?, 0, 'done', '{"kind":"tool_call","tool":"t","args":{"s":"' || printf('%.*c', ?, 'a') || '"}}', '2026-01-01T00:00:00Z')`, id+"s", id, size); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO events (run_id, at, type, payload_json, hash) VALUES (?, '2026-01-01T00:00:00Z', 'step.decided', '{"s":"' || printf('%.*c', ?, 'p') || '"}', '')`, id, size); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	ctx := context.Background()
	measure := func(name string, f func() error) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
			t.Errorf("%s allocated %d MB for a page of rows of %d MB each", name, got>>20, size>>20)
		}
	}
	measure("ListRunsPage", func() error { _, _, err := s.ListRunsPage(ctx, 50, 0); return err })
	measure("GetRunCapped", func() error { _, err := s.GetRunCapped(ctx, "huge3"); return err })
	measure("ListStepsPage", func() error { _, _, err := s.ListStepsPage(ctx, "huge3", 50, 0); return err })
	measure("ListEventsPage", func() error { _, _, err := s.ListEventsPage(ctx, "", 50, 0); return err })
	measure("ListApprovalsPage", func() error { _, _, err := s.ListApprovalsPage(ctx, "huge3", "", 50, 0); return err })
}

// RunHeads pages through every run's chain head in run id order: each
// names the run's newest event, its place in the run and its stored hash.
func TestRunHeads_NameEachRunsNewestEvent(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	ctx := context.Background()
	for i, run := range []string{"b", "a", "c", "a", "b", "a"} {
		if _, err := s.Update(ctx, func(tx agentrt.Tx) error {
			if _, err := tx.RunGet(run); errors.Is(err, agentrt.ErrNotFound) {
				if err := tx.RunInsert(agentrt.Run{ID: run, Status: agentrt.RunRunning, CreatedAt: time.Unix(0, 0)}); err != nil {
					return err
				}
			}
			_, err := tx.EventAppend(agentrt.Event{RunID: run, At: time.Unix(int64(i), 0), Type: agentrt.EventStepStarted})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.RunHeads(ctx, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := s.RunHeads(ctx, "b", 2)
	if err != nil {
		t.Fatal(err)
	}
	got := append(first, rest...)
	want := []struct {
		run        string
		place, seq int64
	}{{"a", 3, 6}, {"b", 2, 5}, {"c", 1, 3}}
	if len(got) != len(want) {
		t.Fatalf("RunHeads = %+v, want 3 heads", got)
	}
	for i, w := range want {
		h, err := s.EventHash(ctx, w.seq)
		if err != nil {
			t.Fatal(err)
		}
		if g := got[i]; g.RunID != w.run || g.Place != w.place || g.Seq != w.seq || g.Hash != h {
			t.Errorf("head %d = %+v, want run %s place %d seq %d hash %s", i, g, w.run, w.place, w.seq, h)
		}
	}
}
