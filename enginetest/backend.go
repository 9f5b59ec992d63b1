package enginetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	kit "github.com/agentrt/agentrt/internal/enginekit"

	agentrt "github.com/agentrt/agentrt"
)

// Backend is a storage backend the suite runs on: how to make one test's
// database, open stores on it, and reach its rows as a writer of the
// database would, outside any store. The tamper and forgery cases use that
// raw access to rewrite rows; they write portable SQL (both backends keep
// the same tables, columns and text formats) with ? placeholders, which the
// suite renumbers for a backend that wants $1, $2, ...
type Backend struct {
	// Name is the backend's name in failure messages ("sqlite", "postgres").
	Name string
	// Fresh creates an empty database for one test, removed when the test
	// ends, and returns its address as agentrt's -db flag takes it: a file
	// path or a URL.
	Fresh func(t testing.TB) string
	// Open opens a store on a database Fresh made. Each call is a store of
	// its own, as a second process's would be; the suite closes it.
	Open func(ctx context.Context, dsn string) (agentrt.Store, error)
	// Raw opens a database/sql handle on the database; the suite closes it.
	Raw func(dsn string) (*sql.DB, error)
	// Numbered says Raw's placeholders are $1, $2, ... rather than ?.
	Numbered bool
}

// Case is one behaviour of the suite.
type Case struct {
	Name string
	fn   func(t *testing.T, b *Backend)
	// serial cases install the process-wide crash hook, so they run alone.
	serial bool
}

// Names lists the suite's cases in the order Exercise runs them. A name
// with an underscore is a Subject_Behaviour test; the root package runs
// each as the top-level test Test<name> on SQLite.
func Names() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.Name
	}
	return out
}

// Exercise runs every case on b, each a subtest named as the case, in
// parallel with the others except those that install the crash hook.
func Exercise(t *testing.T, b Backend) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if !c.serial {
				t.Parallel()
			}
			c.fn(t, &b)
		})
	}
}

// Run runs the case named name on b, in t itself.
func Run(t *testing.T, b Backend, name string) {
	t.Helper()
	for _, c := range cases {
		if c.Name == name {
			c.fn(t, &b)
			return
		}
	}
	t.Fatalf("enginetest has no case %q", name)
}

// database is one test's database on a backend.
type database struct {
	b   *Backend
	dsn string
	raw *sql.DB
	// dbClock: the stores keep lease time on the database's clock.
	dbClock bool
}

// fresh makes an empty database for t.
func (b *Backend) fresh(t testing.TB) *database {
	t.Helper()
	return &database{b: b, dsn: b.Fresh(t)}
}

// open opens a store on the database, closed when t ends.
func (d *database) open(t testing.TB) agentrt.Store {
	t.Helper()
	st := d.openUnclosed(t)
	t.Cleanup(func() { st.Close() })
	return st
}

// openUnclosed opens a store the caller closes.
func (d *database) openUnclosed(t testing.TB) agentrt.Store {
	t.Helper()
	st, err := d.b.Open(context.Background(), d.dsn)
	if err != nil {
		t.Fatalf("open %s store: %v", d.b.Name, err)
	}
	if _, ok := st.(agentrt.DatabaseClock); ok {
		d.dbClock = true
	}
	return st
}

// db is the raw handle, opened once.
func (d *database) db(t testing.TB) *sql.DB {
	t.Helper()
	if d.raw == nil {
		db, err := d.b.Raw(d.dsn)
		if err != nil {
			t.Fatalf("raw %s handle: %v", d.b.Name, err)
		}
		t.Cleanup(func() { db.Close() })
		d.raw = db
	}
	return d.raw
}

// sql renumbers q's placeholders for the backend.
func (d *database) sql(q string) string {
	if !d.b.Numbered {
		return q
	}
	var out strings.Builder
	n, quoted := 0, false
	for _, r := range q {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			out.WriteString("$" + strconv.Itoa(n))
			continue
		}
		out.WriteRune(r)
	}
	return out.String()
}

// exec runs one statement outside any store and requires it to change
// exactly want rows.
func (d *database) exec(t testing.TB, want int64, q string, args ...any) {
	t.Helper()
	kit.Exec(t, d.db(t), want, d.sql(q), args...)
}

// column reads one text column of one row.
func (d *database) column(t testing.TB, q string, args ...any) string {
	t.Helper()
	var s string
	if err := d.db(t).QueryRow(d.sql(q), args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// countRows counts the rows a query selects.
func (d *database) countRows(t testing.TB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := d.db(t).QueryRow(d.sql("SELECT COUNT(*) FROM ("+q+") AS counted"), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// editJSON rewrites one member of a JSON column of one row, as a writer of
// the database would, in Go so the SQL stays the same on every backend.
// path names nested object members.
func (d *database) editJSON(t testing.TB, table, col, id string, value any, path ...string) {
	t.Helper()
	doc := map[string]any{}
	if err := json.Unmarshal([]byte(d.column(t, "SELECT "+col+" FROM "+table+" WHERE id = ?", id)), &doc); err != nil {
		t.Fatalf("%s.%s of %s: %v", table, col, id, err)
	}
	m := doc
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("%s.%s of %s has no object at %q", table, col, id, p)
		}
		m = next
	}
	m[path[len(path)-1]] = value
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d.exec(t, 1, "UPDATE "+table+" SET "+col+" = ? WHERE id = ?", string(b), id)
}

// snapshot is every row of every table, as text, sorted. Two equal
// snapshots mean nothing was written in between.
type snapshot = map[string][]string

var snapshotTables = []string{"runs", "steps", "approvals", "model_calls", "tool_specs", "events", "run_salts", "approval_votes"}

func (d *database) snapshot(t testing.TB) snapshot { t.Helper(); return Snapshot(t, d.db(t)) }

func (d *database) requireUnchanged(t testing.TB, before snapshot, what string) {
	t.Helper()
	RequireUnchanged(t, d.db(t), before, what)
}

// Snapshot reads every row of the store's tables through db, each row as
// text, each table's rows sorted: two equal snapshots mean nothing was
// written in between. The root package's SQLite-only tests use it too.
func Snapshot(t testing.TB, db *sql.DB) map[string][]string {
	t.Helper()
	snap := map[string][]string{}
	for _, table := range snapshotTables {
		rows, err := db.Query("SELECT * FROM " + table)
		if err != nil {
			t.Fatalf("snapshot %s: %v", table, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatalf("snapshot %s: %v", table, err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("snapshot %s: %v", table, err)
			}
			var b strings.Builder
			for i, v := range vals {
				if i > 0 {
					b.WriteString(" | ")
				}
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, "%s=%v", cols[i], v)
			}
			snap[table] = append(snap[table], b.String())
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("snapshot %s: %v", table, err)
		}
		rows.Close()
		sort.Strings(snap[table])
	}
	return snap
}

// RequireUnchanged fails unless db holds exactly what before held.
func RequireUnchanged(t testing.TB, db *sql.DB, before map[string][]string, what string) {
	t.Helper()
	after := Snapshot(t, db)
	if reflect.DeepEqual(before, after) {
		return
	}
	for table := range after {
		b, a := before[table], after[table]
		if !reflect.DeepEqual(b, a) {
			t.Errorf("%s changed table %s:\nbefore:\n  %s\nafter:\n  %s", what, table, strings.Join(b, "\n  "), strings.Join(a, "\n  "))
		}
	}
	t.FailNow()
}

// lapseAll moves every held lease's expiry into the past on a store that
// judges leases by the database's clock, where a test's moved wall clock
// (testhook.SetWallClock) lapses no other process's lease; elsewhere the
// moved clock already has, and nothing is written.
func (d *database) lapseAll(t testing.TB) {
	t.Helper()
	if !d.dbClock {
		return
	}
	if _, err := d.db(t).Exec(`UPDATE runs SET lease_expires_at = '2000-01-01T00:00:00Z' WHERE lease_owner <> ''`); err != nil {
		t.Fatalf("lapse the leases: %v", err)
	}
}

// rowEdit rewrites the approvals row id as a writer of the database would.
type rowEdit func(t testing.TB, d *database, id string)

// sqlEdit runs q, whose last placeholder is the approval's id.
func sqlEdit(q string, args ...any) rowEdit {
	return func(t testing.TB, d *database, id string) { d.exec(t, 1, q, append(args, id)...) }
}

// jsonEdit sets one member of one of the approval's JSON columns.
func jsonEdit(col string, value any, path ...string) rowEdit {
	return func(t testing.TB, d *database, id string) { d.editJSON(t, "approvals", col, id, value, path...) }
}
