package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Every read, full or page, selects its columns through a cols list, so that
// no read asks SQLite for a value it should not load. SQLite loads a whole
// value for any function of it (substr and CAST included) but reads only
// the record header for octet_length and typeof. So each column is selected
// beside its size or type, and the value itself only under a CASE that
// checks the size first: a value over agentrt.MaxStoredValue is never
// loaded, and is reported by its size. An integer column is selected only
// when it holds an integer; anything else is reported by its type rather
// than failing the scan.

type colKind int

const (
	// colWhole is text read whole when it fits MaxStoredValue.
	colWhole colKind = iota
	// colHead is text cut to MaxPageText, read when it fits MaxStoredValue.
	colHead
	// colSmall is text read whole only when it fits MaxPageText: a page
	// reads what it prints from a larger one with the JSON functions.
	colSmall
	// colInt is an integer, read only when stored as one.
	colInt
)

type col struct {
	name string
	kind colKind
}

func textCols(kind colKind, names ...string) []col {
	out := make([]col, len(names))
	for i, n := range names {
		out[i] = col{n, kind}
	}
	return out
}

// selectCols is the select list for cols: two result columns each.
func selectCols(cols []col) string {
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		n := c.name
		switch c.kind {
		case colWhole:
			parts = append(parts, fmt.Sprintf("CASE WHEN octet_length(%s) <= %d THEN %s END, octet_length(%s)", n, agentrt.MaxStoredValue, n, n))
		case colHead:
			parts = append(parts, fmt.Sprintf("CASE WHEN octet_length(%s) <= %d THEN substr(CAST(%s AS BLOB), 1, %d) END, octet_length(%s)",
				n, agentrt.MaxStoredValue, n, agentrt.MaxPageText, n))
		case colSmall:
			parts = append(parts, fmt.Sprintf("CASE WHEN octet_length(%s) <= %d THEN %s END, octet_length(%s)", n, agentrt.MaxPageText, n, n))
		case colInt:
			parts = append(parts, fmt.Sprintf("CASE WHEN typeof(%s) = 'integer' THEN %s END, typeof(%s)", n, n, n))
		}
	}
	return strings.Join(parts, ", ")
}

// row is one scanned row of cols. Its accessors record in bad what did not
// decode, column by column, for DecodeError.
type row struct {
	cols []col
	at   map[string]int
	text []sql.NullString
	size []sql.NullInt64
	ints []sql.NullInt64
	typ  []sql.NullString
	bad  []string
}

// colIndex maps each list's names to positions, built once per list.
func colIndex(cols []col) map[string]int {
	m := make(map[string]int, len(cols))
	for i, c := range cols {
		m[c.name] = i
	}
	return m
}

func newRow(cols []col, at map[string]int) *row {
	return &row{cols: cols, at: at, text: make([]sql.NullString, len(cols)), size: make([]sql.NullInt64, len(cols)),
		ints: make([]sql.NullInt64, len(cols)), typ: make([]sql.NullString, len(cols))}
}

// dest is the scan destinations for the row, then extra.
func (r *row) dest(extra ...any) []any {
	d := make([]any, 0, 2*len(r.cols)+len(extra))
	for i, c := range r.cols {
		if c.kind == colInt {
			d = append(d, &r.ints[i], &r.typ[i])
		} else {
			d = append(d, &r.text[i], &r.size[i])
		}
	}
	return append(d, extra...)
}

func (r *row) scan(s scanner, extra ...any) error {
	for i := range r.cols {
		r.text[i], r.size[i], r.ints[i], r.typ[i] = sql.NullString{}, sql.NullInt64{}, sql.NullInt64{}, sql.NullString{}
	}
	r.bad = r.bad[:0]
	return s.Scan(r.dest(extra...)...)
}

func (r *row) note(format string, args ...any) { r.bad = append(r.bad, fmt.Sprintf(format, args...)) }

// decodeError joins what did not decode, "" when everything did.
func (r *row) decodeError() string { return strings.Join(r.bad, "; ") }

func (r *row) i(name string) int {
	i, ok := r.at[name]
	if !ok {
		panic("sqlstore: no column " + name)
	}
	return i
}

// tooBig says why a value was not read.
func tooBig(size int64) string {
	return fmt.Sprintf("%d bytes, larger than any value agentrt writes", size)
}

// raw returns a text column as stored and its size in bytes; ok is false
// when the column's kind left it unread for its size.
func (r *row) raw(name string) (s string, size int64, ok bool) {
	i := r.i(name)
	return r.text[i].String, r.size[i].Int64, r.read(i)
}

// read reports whether column i was selected: by its size, since an empty
// value may come back as NULL.
func (r *row) read(i int) bool {
	limit := int64(agentrt.MaxStoredValue)
	if r.cols[i].kind == colSmall {
		limit = agentrt.MaxPageText
	}
	return !r.size[i].Valid || r.size[i].Int64 <= limit
}

// str returns a text column: whole for colWhole and colSmall (a value too
// big to read is "" and noted), the head and a marker for colHead.
func (r *row) str(name string) string {
	i := r.i(name)
	s, size, ok := r.text[i].String, r.size[i].Int64, r.read(i)
	switch {
	case r.cols[i].kind == colHead:
		if !ok {
			return fmt.Sprintf("…[not read: %s]", tooBig(size))
		}
		return capText([]byte(s), size)
	case !ok:
		r.note("%s (%s) not read", name, tooBig(size))
		return ""
	}
	return s
}

// int64 returns an integer column; anything else is 0 and noted.
func (r *row) int64(name string) int64 {
	i := r.i(name)
	if !r.ints[i].Valid {
		r.note("%s: stored as %s, not an integer", name, truncate(r.typ[i].String, 16))
		return 0
	}
	return r.ints[i].Int64
}

func (r *row) int(name string) int {
	v := r.int64(name)
	if int64(int(v)) != v {
		r.note("%s: %d does not fit an int", name, v)
		return 0
	}
	return int(v)
}

// time parses a time column; one that does not parse is zero and noted.
func (r *row) time(name string) time.Time {
	s := r.str(name)
	t, err := parseTime(s)
	if err != nil {
		r.note("%s: %v", name, err)
	}
	return t
}

// jsonFields selects, from a JSON column that is over MaxPageText but within
// MaxStoredValue, the named top-level fields as a JSON array: what a page
// prints of a row it does not read whole. One json_extract names every
// field, because SQLite loads the value again for each mention of the
// column. A column that is not JSON text selects NULL rather than failing
// the page, as json_extract alone would.
func jsonFields(column string, fields ...string) string {
	paths := make([]string, len(fields))
	for i, f := range fields {
		paths[i] = "'$." + f + "'"
	}
	return fmt.Sprintf("CASE WHEN typeof(%[1]s) = 'text' AND octet_length(%[1]s) > %[2]d AND octet_length(%[1]s) <= %[3]d AND json_valid(%[1]s) THEN json_extract(%[1]s, %[4]s) END",
		column, agentrt.MaxPageText, agentrt.MaxStoredValue, strings.Join(paths, ", "))
}

// decodeFields reads what jsonFields selected: each field as text capped at
// n bytes with a marker, "" for a field the value does not have. ok is false
// when there was nothing to read.
func decodeFields(s sql.NullString, want, n int) ([]string, bool) {
	if !s.Valid {
		return nil, false
	}
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(s.String), &arr); err != nil || len(arr) != want {
		return nil, false
	}
	out := make([]string, len(arr))
	for k, v := range arr {
		var str string
		if json.Unmarshal(v, &str) != nil {
			if string(v) == "null" {
				continue
			}
			str = string(v)
		}
		h := str
		if len(h) > n {
			h = h[:n]
		}
		out[k] = capText([]byte(h), int64(len(str)))
	}
	return out, true
}
