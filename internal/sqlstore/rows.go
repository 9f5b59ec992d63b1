package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/sqlscan"
)

// scanner is a row a scan function reads: a row of *sql.Rows or a *sql.Row.
type scanner = sqlscan.Scanner

// scanRows reads every row of a query's result with scan, in order, and
// closes rows; it is sqlscan.All, the loop the proxy's index shares.
func scanRows[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	return sqlscan.All(rows, err, scan)
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
