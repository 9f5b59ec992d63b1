package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

// scanRows reads every row of a query's result with scan, in order, and
// closes rows. err is the query's own error, so a call can wrap the query
// itself: scanRows(db.QueryContext(...)). The first error stops it.
func scanRows[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanOne reads one row of cols into a new row; no row is ErrNotFound,
// naming what.
func scanOne(s scanner, cols []col, at map[string]int, what string) (*row, error) {
	r := newRow(cols, at)
	err := r.scan(s)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", agentrt.ErrNotFound, what)
	}
	return r, err
}

// notFoundAs returns v and err, but an ErrNotFound err in the words of
// format and args, which say what was looked for.
func notFoundAs[T any](v T, err error, format string, args ...any) (T, error) {
	if errors.Is(err, agentrt.ErrNotFound) {
		return v, fmt.Errorf("%w: "+format, append([]any{agentrt.ErrNotFound}, args...)...)
	}
	return v, err
}

// scanString reads a row of one text column.
func scanString(s scanner) (string, error) {
	var v string
	err := s.Scan(&v)
	return v, err
}
