package console_test

import (
	"database/sql"
	"encoding/json"
	"io"
	"log"
)

// sqlOpen opens a database file with plain SQL, as another writer would.
func sqlOpen(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
}

func newLogger(w io.Writer) *log.Logger { return log.New(w, "", 0) }

func jsonDecode(s string, v any) error { return json.Unmarshal([]byte(s), v) }
