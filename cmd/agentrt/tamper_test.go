package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// goldenRun is the one run of testdata/events/schema3.db: 36 events of
// the global chain, written by agentrt demo at schema version 3.
const goldenRun = "01a233608e8d147674d1b5c2b074da46"

// tamperCase is one change a database writer makes and the event the
// real binary's verify must then report as the first break: want reads
// its seq before the change.
type tamperCase struct {
	name, change, want string
	// sqliteOnly marks what only SQLite's gapless seqs catch: on
	// PostgreSQL the checkpoints (ADR 0015) catch a deleted run once it is
	// folded (the folded cases).
	sqliteOnly bool
	// folded runs agentrt checkpoint until every event is folded before
	// the change; want then names the event the check of the checkpoints
	// must find gone, on both backends.
	folded bool
}

var tamperCases = []tamperCase{
	{name: "before/altered", change: `UPDATE events SET payload_json = '{"tampered":true}' WHERE seq = 5`, want: `SELECT 5`},
	{name: "before/deleted", change: `DELETE FROM events WHERE seq = 6`, want: `SELECT 7`},
	{name: "before/reordered", change: `UPDATE events SET payload_json = CASE seq WHEN 4 THEN (SELECT payload_json FROM events WHERE seq = 8)
		ELSE (SELECT payload_json FROM events WHERE seq = 4) END WHERE seq IN (4, 8)`, want: `SELECT 4`},
	{name: "before/last deleted", change: `DELETE FROM events WHERE seq = 36`, want: `SELECT 36`},
	{name: "after/altered", change: `UPDATE events SET payload_json = '{"tampered":true}' WHERE run_id = 'run-a' AND run_seq = 3`,
		want: `SELECT seq FROM events WHERE run_id = 'run-a' AND run_seq = 3`},
	{name: "after/deleted", change: `DELETE FROM events WHERE run_id = 'run-a' AND run_seq = 3`,
		want: `SELECT seq FROM events WHERE run_id = 'run-a' AND run_seq = 4`},
	{name: "after/reordered", change: `UPDATE events SET payload_json = CASE run_seq
		WHEN 2 THEN (SELECT payload_json FROM events WHERE run_id = 'run-a' AND run_seq = 5)
		ELSE (SELECT payload_json FROM events WHERE run_id = 'run-a' AND run_seq = 2) END WHERE run_id = 'run-a' AND run_seq IN (2, 5)`,
		want: `SELECT seq FROM events WHERE run_id = 'run-a' AND run_seq = 2`},
	{name: "after/place swapped", change: `UPDATE events SET run_seq = -2 WHERE run_id = 'run-a' AND run_seq = 2;
		UPDATE events SET run_seq = 2 WHERE run_id = 'run-a' AND run_seq = 3;
		UPDATE events SET run_seq = 3 WHERE run_id = 'run-a' AND run_seq = -2`,
		want: `SELECT seq FROM events WHERE run_id = 'run-a' AND run_seq = 2`},
	{name: "after/run deleted", change: `DELETE FROM events WHERE run_id = 'run-a'`,
		want: `SELECT seq FROM events WHERE run_id = 'run-b' AND run_seq = 1`, sqliteOnly: true},
	{name: "after/folded run deleted", change: `DELETE FROM events WHERE run_id = 'run-a'`,
		want: `SELECT seq FROM events WHERE run_id = 'run-a' AND run_seq = 1`, folded: true},
}

// The tamper suite, through the real agentrt binary on both backends: a
// database holding events of the global chain (the golden schema-3
// database's, migrated) and of per-run chains written after the
// migration verifies intact; each change a database writer can make to
// either (an event altered, deleted or reordered, the global chain's end
// cut, an event's place in its run swapped, a whole run deleted) makes
// verify exit 1 naming the first event that no longer chains; a whole run
// deleted after agentrt checkpoint folded it makes verify's check of the
// checkpoints name its first event as gone, on PostgreSQL too.
func TestVerify_TamperCasesBeforeAndAfterTheMigration(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	backends := []struct {
		name    string
		fixture func(t *testing.T) (db string, exec func(q string) int64)
	}{
		{"sqlite", sqliteTamperFixture},
		{"postgres", pgTamperFixture},
	}
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			for _, c := range tamperCases {
				if c.sqliteOnly && bk.name != "sqlite" {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					db, exec := bk.fixture(t)
					if r := runBin(t, bin, nil, "-db", db, "verify"); r.code != 0 || !strings.Contains(r.stdout, "intact") {
						t.Fatalf("verify before the change = %d\n%s%s", r.code, r.stdout, r.stderr)
					}
					want := exec(c.want)
					if c.folded {
						foldEvery(t, bin, db, exec)
					}
					exec(c.change)
					r := runBin(t, bin, nil, "-db", db, "verify")
					if c.folded {
						if r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("checkpoints NOT verified: the event at seq %d,", want)) {
							t.Fatalf("verify after %s = %d, want exit 1 and the checkpoints naming seq %d gone\n%s%s", c.name, r.code, want, r.stdout, r.stderr)
						}
						return
					}
					if r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("broken at seq %d:", want)) {
						t.Fatalf("verify after %s = %d, want exit 1 and a break at seq %d\n%s%s", c.name, r.code, want, r.stdout, r.stderr)
					}
				})
			}
		})
	}
}

// goldenCopy copies the golden schema-3 database to a fresh directory, as
// name, and returns its path.
func goldenCopy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "testdata", "events", "schema3.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sqliteTamperFixture copies the golden schema-3 database, migrates it by
// opening it as a program does, and adds two runs written after the
// migration; exec runs a statement on the file (returning the first
// column of the first row, or 0).
func sqliteTamperFixture(t *testing.T) (string, func(string) int64) {
	path := goldenCopy(t, "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	afterMigration(t, st)
	st.Close()
	return path, func(q string) int64 {
		var v int64
		err := testrig.FillDB(path, func(ctx context.Context, tx *sql.Tx) error {
			for _, s := range strings.Split(q, ";") {
				if err := tx.QueryRowContext(ctx, s).Scan(&v); err != nil && err != sql.ErrNoRows {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
}

// pgTamperFixture makes a PostgreSQL database at schema version 8 holding
// the golden database's events (the global chain, its head row moved by
// the trigger as the runtime's inserts moved it), migrates it by opening
// it as a program does, and adds two runs written after the migration.
func pgTamperFixture(t *testing.T) (string, func(string) int64) {
	dsn := freshDSN(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	files, _ := filepath.Glob(filepath.Join(repo, "postgres", "migrations", "*.sql"))
	sort.Strings(files)
	mustPG(t, c, `CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`)
	for i, f := range files[:8] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mustPG(t, c, string(b))
		mustPG(t, c, "INSERT INTO schema_migrations (version) VALUES ($1)", i+1)
	}
	copyGolden(t, c)
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	afterMigration(t, st)
	st.Close()
	return dsn, func(q string) int64 {
		var v int64
		for _, s := range strings.Split(q, ";") {
			if err := c.QueryRow(ctx, s).Scan(&v); err != nil && err != pgx.ErrNoRows {
				t.Fatalf("%s: %v", s, err)
			}
		}
		return v
	}
}

// copyGolden writes the golden database's run and events, as stored, into
// the PostgreSQL database on c.
func copyGolden(t *testing.T, c *pgx.Conn) {
	path := goldenCopy(t, "golden.db")
	mustPG(t, c, "INSERT INTO runs (id, status, created_at) VALUES ($1, 'COMPLETED', '2026-01-01T00:00:00Z')", goldenRun)
	n := 0
	err := testrig.FillDB(path, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, run_id, step_id, at, type, payload_json, hash FROM events ORDER BY seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var run, step, at, typ, payload, hash string
			if err := rows.Scan(&seq, &run, &step, &at, &typ, &payload, &hash); err != nil {
				return err
			}
			if _, err := c.Exec(ctx, `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				seq, run, step, at, typ, payload, hash); err != nil {
				return err
			}
			n++
		}
		return rows.Err()
	})
	if err != nil || n != 36 {
		t.Fatalf("copying the golden events: %d copied, %v", n, err)
	}
}

func mustPG(t *testing.T, c *pgx.Conn, q string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%.60s: %v", q, err)
	}
}

// afterMigration runs two runs, run-a and then run-b, to completion on st
// with the real engine: each calls a read-only tool twice.
func afterMigration(t *testing.T, st agentrt.Store) {
	ctx := context.Background()
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "read", Description: "read", SideEffect: agentrt.ReadOnly, Timeout: 10 * time.Second,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`), Summary: "ok"}, nil
		},
	}
	for _, id := range []string{"run-a", "run-b"} {
		d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tool}},
			Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("read", `{}`, "look"), scripted.ToolCall("read", `{"again":1}`, "look again"), scripted.Complete(`{}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := d.StartWithID(ctx, id, "look twice", agentrt.DefaultLimits()); err != nil || r.Status != agentrt.RunCompleted {
			t.Fatalf("run %s = %s, %v", id, r.Status, err)
		}
	}
}

// foldEvery runs agentrt checkpoint on db until every event is folded (on
// PostgreSQL the watermark may hold some back a moment) and returns the
// last checkpoint as it says to keep it.
func foldEvery(t *testing.T, bin, db string, exec func(string) int64) string {
	t.Helper()
	keep := regexp.MustCompile(`keep it as: (\S+)`)
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := runBin(t, bin, nil, "-db", db, "checkpoint")
		m := keep.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil {
			t.Fatalf("agentrt checkpoint = %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if exec(`SELECT COUNT(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_leaves l WHERE l.seq = e.seq)`) == 0 {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatal("events still unfolded after 30s of agentrt checkpoint")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A run's newest events cut, and the checkpoints rebuilt without them,
// leave a database plain verify finds intact on both backends (the run's
// chain is a shorter chain; on SQLite the cut run is the last, so no seq
// gap shows): through the real binary, verify -head with the checkpoint
// kept before the cut fails it.
func TestVerify_KeptCheckpointCatchesARunsCutTailOnBothBackends(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	for _, bk := range []struct {
		name    string
		fixture func(t *testing.T) (string, func(string) int64)
	}{{"sqlite", sqliteTamperFixture}, {"postgres", pgTamperFixture}} {
		t.Run(bk.name, func(t *testing.T) {
			db, exec := bk.fixture(t)
			kept := foldEvery(t, bin, db, exec)
			if r := runBin(t, bin, nil, "-db", db, "verify", "-head", kept); r.code != 0 || !strings.Contains(r.stdout, "kept checkpoint: extended") {
				t.Fatalf("verify -head before the cut = %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			cut := `(SELECT seq FROM events WHERE run_id = 'run-b' AND run_seq > (SELECT MAX(run_seq) - 3 FROM events WHERE run_id = 'run-b'))`
			exec(`DELETE FROM event_leaves WHERE seq IN ` + cut + `; DELETE FROM events WHERE seq NOT IN (SELECT seq FROM event_leaves);
				DELETE FROM checkpoints; DELETE FROM tree_hashes; DELETE FROM event_leaves`)
			foldEvery(t, bin, db, exec)
			if r := runBin(t, bin, nil, "-db", db, "verify"); r.code != 0 || !strings.Contains(r.stdout, "intact") {
				t.Fatalf("plain verify after the cut and the refold = %d, want 0: only the kept checkpoint shows the cut\n%s%s", r.code, r.stdout, r.stderr)
			}
			r := runBin(t, bin, nil, "-db", db, "verify", "-head", kept)
			if r.code != 1 || !strings.Contains(r.stdout, "checkpoints NOT verified") || !strings.Contains(r.stdout, "cut from its end") {
				t.Fatalf("verify -head %s after the cut = %d, want exit 1 and the kept checkpoint not extended\n%s%s", kept, r.code, r.stdout, r.stderr)
			}
		})
	}
}
