package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// Measuring a value over the read limit works where loading it does not:
// octet_length of a column and length of a blob column are answered from
// the record, so a read can report a value's size without holding it.
func TestOpenReader_MeasuresAValueItWillNotLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.db")
	w, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(`CREATE TABLE t (s TEXT, b BLOB); INSERT INTO t VALUES (printf('%.*c', ?, 's'), zeroblob(?))`, maxReadLength+1, maxReadLength+1); err != nil {
		t.Fatal(err)
	}
	r, err := openReader(dsn(p, "ro", false))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetMaxOpenConns(2)
	for _, q := range []string{"SELECT octet_length(s) FROM t", "SELECT octet_length(b) FROM t", "SELECT length(b) FROM t"} {
		var n int
		if err := r.QueryRow(q).Scan(&n); err != nil || n != maxReadLength+1 {
			t.Errorf("%s = %d, %v; want %d", q, n, err, maxReadLength+1)
		}
	}
	for _, q := range []string{"SELECT s FROM t", "SELECT length(s) FROM t", "SELECT substr(CAST(s AS BLOB), 1, 10) FROM t", "SELECT b FROM t"} {
		var v any
		if err := r.QueryRow(q).Scan(&v); err == nil {
			t.Errorf("%s loaded a value over the limit", q)
		}
	}
	// Every connection of the pool has the limit, not just the first.
	c1, err := r.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	var v any
	if err := r.QueryRow("SELECT s FROM t").Scan(&v); err == nil {
		t.Error("a second connection loaded a value over the limit")
	}
}
