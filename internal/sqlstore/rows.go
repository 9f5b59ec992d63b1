package sqlstore

import "database/sql"

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

// scanString reads a row of one text column.
func scanString(s scanner) (string, error) {
	var v string
	err := s.Scan(&v)
	return v, err
}
