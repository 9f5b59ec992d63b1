// Package sqlscan is the one loop that reads a query's rows into a slice,
// shared by the runs store (internal/sqlstore) and the proxy's call index.
package sqlscan

import "database/sql"

// Scanner is what a row reader is handed: a row of *sql.Rows, or a
// *sql.Row.
type Scanner interface{ Scan(dest ...any) error }

// All reads every row of a query's result with scan, in order, and closes
// rows. err is the query's own error, so a caller passes the query's two
// results straight on: rows, err := db.QueryContext(...); All(rows, err,
// scan). The first error stops it.
func All[T any](rows *sql.Rows, err error, scan func(Scanner) (T, error)) ([]T, error) {
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
