package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/sqlscan"
	"github.com/agentrt/agentrt/sqlite"
)

// stepRow is every column of a steps row but the printed fields, as stored.
type stepRow struct {
	rowid                                 int64
	id, runID                             string
	idx                                   int64
	status, dec, pol, obs                 string
	startedAt, finishedAt, spec, policyID string
}

func stepRows(t *testing.T, db *sql.DB) []stepRow {
	t.Helper()
	q, err := db.Query(`SELECT rowid, id, run_id, idx, status, decision_json, policy_json, observation_json,
		started_at, finished_at, spec_hash, policy_id FROM steps ORDER BY rowid`)
	rows, err := sqlscan.All(q, err, func(sc sqlscan.Scanner) (stepRow, error) {
		var r stepRow
		err := sc.Scan(&r.rowid, &r.id, &r.runID, &r.idx, &r.status, &r.dec, &r.pol, &r.obs, &r.startedAt, &r.finishedAt, &r.spec, &r.policyID)
		return r, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func schemaVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A version-1 database with steps, one of them with JSON columns over the
// page cap, is refused by OpenExisting (the operator CLI never migrates)
// and left at version 1; Open migrates it to this build's version keeping
// every row as it was, rowids included, records the printed fields of the
// big columns, and leaves no foreign key broken. A page of it then shows
// the big step's real kind and summary, and a full read the JSON itself.
func TestOpen_MigratesAVersion1DatabaseKeepingItsSteps(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v1.db")
	bigObs, _ := json.Marshal(agentrt.Observation{Kind: agentrt.ObsToolError, Summary: "disk " + strings.Repeat("f", 300) + "ull",
		Content: json.RawMessage(`"` + strings.Repeat("o", 2*agentrt.MaxPageText) + `"`)})
	bigDec, _ := json.Marshal(agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "write", Args: json.RawMessage(`{"s":"` + strings.Repeat("a", 2*agentrt.MaxPageText) + `"}`)})
	craftAt(t, p, 1, nil,
		`INSERT INTO steps (id, run_id, idx, status, decision_json, policy_json, observation_json, started_at, finished_at, spec_hash, policy_id)
			VALUES ('s0', 'r1', 0, 'done', '{"kind":"tool_call","tool":"read"}', '{"outcome":"allow"}', '{"kind":"tool_result","summary":"ok"}',
			'2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 'h0', 'p0')`,
		`INSERT INTO steps (rowid, id, run_id, idx, status, decision_json, policy_json, observation_json, started_at)
			VALUES (7, 's1', 'r1', 1, 'failed', '`+string(bigDec)+`', '{"outcome":"deny","reason":"no"}', '`+string(bigObs)+`', '2026-01-01T00:00:02Z')`,
		// Not JSON, and over the cap: left unrecorded.
		`INSERT INTO steps (id, run_id, idx, status, observation_json, started_at)
			VALUES ('s2', 'r1', 2, 'failed', printf('%.*c', 70000, 'x'), '2026-01-01T00:00:03Z')`,
	)
	db := raw(t, p)
	before := stepRows(t, db)
	if len(before) != 3 {
		t.Fatalf("crafted %d steps", len(before))
	}

	s := requireMigratedOnlyByOpen(t, p, db, 1)
	after := stepRows(t, db)
	if len(after) != len(before) {
		t.Fatalf("%d steps after the migration, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("step %d changed in the migration:\nbefore %.300v\nafter  %.300v", i, before[i], after[i])
		}
	}
	fields := map[string][3]sql.NullString{}
	rows, err := db.Query("SELECT id, decision_fields, policy_fields, observation_fields FROM steps")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var f [3]sql.NullString
		if err := rows.Scan(&id, &f[0], &f[1], &f[2]); err != nil {
			t.Fatal(err)
		}
		fields[id] = f
	}
	rows.Close()
	if f := fields["s0"]; f[0].Valid || f[1].Valid || f[2].Valid {
		t.Errorf("a small step got printed fields %v", f)
	}
	if f := fields["s1"]; f[0].String != `["tool_call","write",null,null]` || f[1].Valid ||
		!strings.HasPrefix(f[2].String, `["tool_error","disk fff`) || !strings.Contains(f[2].String, "…[truncated: 308 bytes]") || len(f[2].String) > 300 {
		t.Errorf("the big step's printed fields are %v", f)
	}
	if f := fields["s2"]; f[2].Valid {
		t.Errorf("a value that is not JSON got printed fields %v", f)
	}
	var broken int
	if err := db.QueryRow("SELECT COUNT(*) FROM pragma_foreign_key_check").Scan(&broken); err != nil || broken != 0 {
		t.Fatalf("foreign_key_check: %d rows, %v", broken, err)
	}
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}

	ctx := context.Background()
	page, _, err := s.ListStepsPage(ctx, "r1", 10, 0)
	if err != nil || len(page) != 3 {
		t.Fatalf("page: %d steps, %v", len(page), err)
	}
	if o := page[1].Observation; o == nil || o.Kind != agentrt.ObsToolError || !strings.HasPrefix(o.Summary, "disk fff") {
		t.Fatalf("the big step is listed as %+v", page[1].Observation)
	}
	if d := page[1].Decision; d == nil || d.Kind != agentrt.KindToolCall || d.Tool != "write" {
		t.Fatalf("the big step's decision is listed as %+v", page[1].Decision)
	}
	if !strings.Contains(page[2].DecodeError, "not valid JSON") {
		t.Fatalf("the step that is not JSON is listed with DecodeError %q", page[2].DecodeError)
	}
	full, err := s.ListSteps(ctx, "r1")
	if err != nil || len(full) != 3 || full[1].Observation == nil || full[1].Observation.Summary != "disk "+strings.Repeat("f", 300)+"ull" {
		t.Fatalf("full read after the migration: %d steps, %v", len(full), err)
	}
}

// The writer records the printed fields of a JSON column over the page
// cap in the statement that writes it, each capped, and none for a small
// one; clearing an outcome clears them. A page shows the recorded fields
// (they are what it prints, even where a crafted file makes them disagree
// with the JSON), while a full read decodes the JSON. Fields too big, or
// not JSON, are ignored, and the page reads the JSON's own.
func TestStore_PageReadsThePrintedFieldsTheWriterRecorded(t *testing.T) {
	s, p := openTemp(t)
	defer s.Close()
	writeSomething(t, s)
	ctx := context.Background()
	content := json.RawMessage(`"` + strings.Repeat("o", 2*agentrt.MaxPageText) + `"`)
	long := strings.Repeat("é", 150) // 300 bytes
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Update(ctx, func(tx agentrt.Tx) error {
		if err := tx.StepInsert(agentrt.Step{ID: "s0", RunID: "r1", Index: 0, Status: agentrt.StepExecuting, StartedAt: now,
			Decision: &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "fetch"}}); err != nil {
			return err
		}
		return tx.StepUpdate(agentrt.StepUpdate{ID: "s0", Status: agentrt.StepFailed, FinishedAt: now,
			Observation: &agentrt.Observation{Kind: agentrt.ObsToolError, Summary: long, Content: content}})
	}); err != nil {
		t.Fatal(err)
	}
	db := raw(t, p)
	fields := func() (dec, obs sql.NullString) {
		t.Helper()
		if err := db.QueryRow("SELECT decision_fields, observation_fields FROM steps WHERE id = 's0'").Scan(&dec, &obs); err != nil {
			t.Fatal(err)
		}
		return
	}
	dec, obs := fields()
	if dec.Valid {
		t.Errorf("a small decision got printed fields %q", dec.String)
	}
	var got []string
	if err := json.Unmarshal([]byte(obs.String), &got); err != nil || len(got) != 3 || got[0] != "tool_error" ||
		len(got[1]) > 200 || !strings.HasPrefix(got[1], "éé") || !strings.HasSuffix(got[1], "…[truncated: 300 bytes]") {
		t.Fatalf("observation_fields = %q (%v)", obs.String, err)
	}
	page := func() agentrt.Step {
		t.Helper()
		steps, _, err := s.ListStepsPage(ctx, "r1", 10, 0)
		if err != nil || len(steps) != 1 {
			t.Fatalf("page: %d steps, %v", len(steps), err)
		}
		return steps[0]
	}
	if o := page().Observation; o == nil || o.Kind != agentrt.ObsToolError || o.Summary != got[1] {
		t.Fatalf("page lists the observation as %+v", o)
	}

	// A crafted file's fields are what a page prints; a full read is the JSON.
	if _, err := db.Exec(`UPDATE steps SET observation_fields = '["tool_result","all fine",""]' WHERE id = 's0'`); err != nil {
		t.Fatal(err)
	}
	if o := page().Observation; o == nil || o.Summary != "all fine" || !strings.Contains(page().DecodeError, "not read whole") {
		t.Fatalf("page lists crafted fields as %+v", o)
	}
	full, err := s.ListSteps(ctx, "r1")
	if err != nil || len(full) != 1 || full[0].Observation == nil || full[0].Observation.Kind != agentrt.ObsToolError || full[0].Observation.Summary != long {
		t.Fatalf("a full read did not decode the JSON: %+v, %v", full, err)
	}
	for _, bad := range []string{"printf('%.*c', 5000, '[')", "'not json'", "x'00ff'"} {
		if _, err := db.Exec(`UPDATE steps SET observation_fields = ` + bad + ` WHERE id = 's0'`); err != nil {
			t.Fatal(err)
		}
		if o := page().Observation; o == nil || o.Kind != agentrt.ObsToolError || !strings.HasPrefix(o.Summary, "éé") {
			t.Fatalf("with observation_fields %s the page lists %+v", bad, o)
		}
	}

	if _, err := s.Update(ctx, func(tx agentrt.Tx) error {
		return tx.StepUpdate(agentrt.StepUpdate{ID: "s0", ClearOutcome: true})
	}); err != nil {
		t.Fatal(err)
	}
	if _, obs := fields(); obs.Valid {
		t.Fatalf("clearing the outcome left observation_fields %q", obs.String)
	}
}

// A version-2 database whose chain lost its last event is refused by
// OpenExisting and left at version 2; Open migrates it to this build's
// version, keeping every event byte for byte and the highest seq ever
// used, so the chain still verifies, the next event does not reuse the
// lost seq, and an event of no run (an approver's) can now be appended.
func TestOpen_MigratesAVersion2DatabaseKeepingItsChain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	s, err := sqlite.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// The run is inserted as a version-2 runtime would have: with no salt,
	// so its events' digests are plain SHA-256.
	if _, err := raw(t, src).Exec(`INSERT INTO runs (id, status, created_at) VALUES ('r1', 'RUNNING', '2026-01-01T00:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(ctx, func(tx agentrt.Tx) error {
		for i := 0; i < 3; i++ {
			if _, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: at, Type: agentrt.EventRunStarted, Payload: json.RawMessage(`{"i":1}`)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	p := filepath.Join(dir, "v2.db")
	db := raw(t, p)
	for _, f := range []string{"migrations/0001_init.sql", "migrations/0002_step_columns.sql"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, q := range []string{
		"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
		"INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00Z'), (2, '2026-01-01T00:00:00Z')",
		"ATTACH DATABASE '" + src + "' AS src",
		"INSERT INTO runs SELECT id, goal, status, reason, reason_detail, limits_json, step_count, created_at, started_at, finished_at, result_json, model_calls, input_tokens, output_tokens, cached_input_tokens, estimated_cost_micros, active_ns, lease_owner, lease_expires_at, generation FROM src.runs",
		"INSERT INTO events SELECT seq, run_id, step_id, at, type, payload_json, hash FROM src.events",
		"DETACH DATABASE src",
		"DELETE FROM events WHERE seq = 3",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	events := func() string {
		rows, err := db.Query("SELECT seq, run_id, step_id, at, type, payload_json, hash FROM events ORDER BY seq")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var seq int64
			var r, st, a, ty, pl, h string
			if err := rows.Scan(&seq, &r, &st, &a, &ty, &pl, &h); err != nil {
				t.Fatal(err)
			}
			b.WriteString(strings.Join([]string{r, st, a, ty, pl, h}, "|") + "\n")
		}
		return b.String()
	}
	before := events()

	m := requireMigratedOnlyByOpen(t, p, db, 2)
	if after := events(); after != before {
		t.Fatalf("events changed in the migration:\nbefore %s\nafter  %s", before, after)
	}
	rep, err := m.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() || rep.Checked != 2 {
		t.Fatalf("VerifyEvents after the migration = %+v, %v", rep, err)
	}
	evs, err := m.Update(ctx, func(tx agentrt.Tx) error {
		_, err := tx.EventAppend(agentrt.Event{RunID: "", At: at, Type: agentrt.EventApproverEnrolled, Payload: json.RawMessage(`{}`)})
		return err
	})
	if err != nil || len(evs) != 1 || evs[0].Seq != 4 {
		t.Fatalf("appending an approver event = %v, %v; want seq 4, past the lost 3", evs, err)
	}
	m.Close()
	if _, err := sqlite.OpenExisting(p, true); err != nil {
		t.Fatalf("OpenExisting of the migrated file: %v", err)
	}
}

// requireMigratedOnlyByOpen requires that OpenExisting refuses the database
// at p, still at version old, with a SchemaVersionError naming old and the
// build's version and leaves it as it was, and that Open then migrates it
// up to the build's version. It returns the store Open opened, closed when
// the test ends; db is a raw handle on the same file.
func requireMigratedOnlyByOpen(t *testing.T, p string, db *sql.DB, old int) *sqlite.Store {
	t.Helper()
	_, err := sqlite.OpenExisting(p, false)
	var ve *agentrt.SchemaVersionError
	if !errors.As(err, &ve) || ve.Database != old || ve.Build != sqlite.SchemaVersion {
		t.Fatalf("OpenExisting of a version-%d file: %v, want a SchemaVersionError naming %d and %d", old, err, old, sqlite.SchemaVersion)
	}
	if v := schemaVersion(t, db); v != old {
		t.Fatalf("OpenExisting left version %d, want %d", v, old)
	}
	s, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if v := schemaVersion(t, db); v != sqlite.SchemaVersion || sqlite.SchemaVersion <= old {
		t.Fatalf("migrated to version %d, build is %d", v, sqlite.SchemaVersion)
	}
	return s
}
