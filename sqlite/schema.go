package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"sync"

	agentrt "github.com/agentrt/agentrt"
)

// migrationsTable is the statement migrate starts a new database with.
const migrationsTable = "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"

// schemaObject is one row of sqlite_schema, less its root page. A table's
// sql holds every column's definition, so a generated column, a CHECK
// constraint or a DEFAULT expression changes it; an index's holds its
// expressions and WHERE clause. An autoindex has no sql.
type schemaObject struct {
	typ, name, tbl string
	sql            sql.NullString
}

// rank orders the objects a refusal names first: triggers and views are
// nothing but their author's SQL.
func (o schemaObject) rank() int {
	switch o.typ {
	case "trigger":
		return 0
	case "view":
		return 1
	case "table":
		return 2
	case "index":
		return 3
	}
	return 4
}

func sortSchema(objs []schemaObject) {
	sort.Slice(objs, func(i, j int) bool {
		if a, b := objs[i].rank(), objs[j].rank(); a != b {
			return a < b
		}
		if objs[i].typ != objs[j].typ {
			return objs[i].typ < objs[j].typ
		}
		return objs[i].name < objs[j].name
	})
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type execQuerier interface {
	querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// readSchema reads the main database's sqlite_schema, sorted. Reading it
// parses every CREATE statement but evaluates none of them.
func readSchema(ctx context.Context, q querier) ([]schemaObject, error) {
	rows, err := q.QueryContext(ctx, "SELECT type, name, tbl_name, sql FROM main.sqlite_schema")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.tbl, &o.sql); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sortSchema(out)
	return out, nil
}

// expected holds, for each version v from 1, the schema the migrations up
// to v create, found by applying them to an in-memory database: SQLite
// itself writes the text it will compare, so no normalisation is needed.
var expected struct {
	once      sync.Once
	byVersion map[int][]schemaObject
	err       error
}

func expectedSchemas() (map[int][]schemaObject, error) {
	expected.once.Do(func() {
		expected.byVersion, expected.err = buildExpected(context.Background())
		if expected.err != nil {
			expected.err = fmt.Errorf("agentrt: the embedded migrations do not apply: %w", expected.err)
		}
	})
	return expected.byVersion, expected.err
}

func buildExpected(ctx context.Context) (map[int][]schemaObject, error) {
	db, err := sql.Open("sqlite", "file:agentrt-expected-schema?mode=memory&_pragma=foreign_keys(1)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // one connection: each has its own memory database
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, migrationsTable); err != nil {
		return nil, err
	}
	out := map[int][]schemaObject{}
	for _, m := range ms {
		if err := applyMigration(ctx, conn, m); err != nil {
			return nil, err
		}
		if out[m.Version], err = readSchema(ctx, conn); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// firstDifference compares a file's schema with the one expected and
// returns the first object that differs, in the order the refusal names
// them, or nil when they are the same.
func firstDifference(path string, got, want []schemaObject) *agentrt.UnsafeSchemaError {
	type key struct{ typ, name string }
	wantBy := make(map[key]schemaObject, len(want))
	for _, o := range want {
		wantBy[key{o.typ, o.name}] = o
	}
	gotBy := make(map[key]bool, len(got))
	all := append([]schemaObject(nil), got...)
	for _, o := range got {
		gotBy[key{o.typ, o.name}] = true
	}
	for _, o := range want {
		if !gotBy[key{o.typ, o.name}] {
			all = append(all, o)
		}
	}
	sortSchema(all)
	for _, o := range all {
		k := key{o.typ, o.name}
		w, inWant := wantBy[k]
		switch {
		case !gotBy[k]:
			return &agentrt.UnsafeSchemaError{Path: path, Type: o.typ, Name: o.name, Difference: agentrt.SchemaMissing}
		case !inWant:
			return &agentrt.UnsafeSchemaError{Path: path, Type: o.typ, Name: o.name, Difference: agentrt.SchemaExtra}
		case o != w:
			return &agentrt.UnsafeSchemaError{Path: path, Type: o.typ, Name: o.name, Difference: agentrt.SchemaAltered}
		}
	}
	return nil
}

// checkSchema refuses a file whose schema is not exactly the one the
// migrations create for the version it records, and returns that version,
// or 0 for a file with no schema at all. It reads sqlite_schema and then,
// only once the schema_migrations table is known to be exactly the
// migrations' own, that table; reading it evaluates nothing the file's
// author wrote. No other table is touched, so nothing a crafted schema
// holds runs before the refusal.
func checkSchema(ctx context.Context, q querier, path string) (int, error) {
	want, err := expectedSchemas()
	if err != nil {
		return 0, err
	}
	got, err := readSchema(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("agentrt: %s is not a readable SQLite database: %w", path, err)
	}
	if len(got) == 0 {
		return 0, nil
	}
	latest := want[SchemaVersion]
	var table, wantTable *schemaObject
	for i := range got {
		if got[i].name == "schema_migrations" {
			table = &got[i]
		}
	}
	for i := range latest {
		if latest[i].name == "schema_migrations" {
			wantTable = &latest[i]
		}
	}
	if table == nil {
		return 0, errNotAgentrt(path)
	}
	if wantTable == nil || *table != *wantTable {
		// The table that says which version to compare with is itself not
		// the migrations': nothing else in the file can be trusted to name
		// a version, so it is what the refusal names.
		return 0, &agentrt.UnsafeSchemaError{Path: path, Type: "table", Name: "schema_migrations", Difference: agentrt.SchemaAltered}
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT MAX(version) FROM main.schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("agentrt: %s is not a readable SQLite database: %w", path, err)
	}
	version := int(v.Int64)
	switch {
	case version > SchemaVersion:
		// A newer build's schema differs by design; the versions say why.
		return 0, &agentrt.SchemaVersionError{Path: path, Database: version, Build: SchemaVersion}
	case version >= 1:
		if d := firstDifference(path, got, want[version]); d != nil {
			return 0, d
		}
		return version, nil
	}
	// Tables, but no version recorded.
	if d := firstDifference(path, got, latest); d != nil {
		return 0, d
	}
	return 0, &agentrt.SchemaVersionError{Path: path, Database: version, Build: SchemaVersion}
}

// errNotAgentrt is what OpenExisting says of a file with no schema.
func errNotAgentrt(path string) error {
	return fmt.Errorf("agentrt: %s is not an agentrt database (it has no schema_migrations table): %w", path, agentrt.ErrSchemaVersion)
}
