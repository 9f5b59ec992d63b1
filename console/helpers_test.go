package console_test

import "database/sql"

// sqlOpen opens a database file with plain SQL, as another writer would.
func sqlOpen(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
}
