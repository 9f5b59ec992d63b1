package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"
)

// maxReadLength is SQLITE_LIMIT_LENGTH on every read connection: the
// longest string or blob one will load, build or return. A value agentrt
// wrote is at most MaxStoredValue; the page of slack above it lets one at
// the bound, and what a read builds around it, still load. A longer value
// fails its read with SQLITE_TOOBIG instead of filling memory. It is a
// second fence behind the reads that measure a value before loading it:
// octet_length of a column and length of a blob column are answered from
// the record header without loading the value, but length of a text value
// and anything of CAST(x AS BLOB) load it, and so fail on one over the
// limit.
const maxReadLength = agentrt.MaxStoredValue + agentrt.MaxPageText

// openReader opens a pool of read connections on dsn, each with its length
// limited to maxReadLength before database/sql can hand it out.
func openReader(dsn string) (*sql.DB, error) {
	c, err := sqlite3.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(lengthLimited{c}), nil
}

// lengthLimited sets the length limit on each connection it opens.
type lengthLimited struct{ driver.Connector }

func (l lengthLimited) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := l.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := limitLength(ctx, dc, maxReadLength); err != nil {
		dc.Close()
		return nil, err
	}
	return dc, nil
}

// limitLength calls sqlite3_limit on dc. The driver exposes it only as
// sqlite.Limit on a *sql.Conn, so dc is lent to a one-connection pool for
// the call, behind a wrapper that Limit sees through and whose Close leaves
// dc open.
func limitLength(ctx context.Context, dc driver.Conn, n int) error {
	db := sql.OpenDB(&lend{conn: lent{dc}})
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := sqlite3.Limit(c, sqlite3lib.SQLITE_LIMIT_LENGTH, n); err != nil {
		return fmt.Errorf("agentrt: cannot limit a read connection's value length: %w", err)
	}
	got, err := sqlite3.Limit(c, sqlite3lib.SQLITE_LIMIT_LENGTH, -1)
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("agentrt: a read connection's value length limit is %d, not %d", got, n)
	}
	return nil
}

// lend is a connector that hands out its one connection once.
type lend struct {
	conn driver.Conn
	used bool
}

func (l *lend) Connect(context.Context) (driver.Conn, error) {
	if l.used {
		return nil, errors.New("agentrt: a lent connection is lent once")
	}
	l.used = true
	return l.conn, nil
}

func (l *lend) Driver() driver.Driver { return lendDriver{} }

type lendDriver struct{}

func (lendDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("agentrt: a lent connection opens nothing")
}

// lent wraps a connection for the one call; closing it returns nothing.
type lent struct{ driver.Conn }

func (l lent) Unwrap() driver.Conn { return l.Conn }
func (lent) Close() error          { return nil }
