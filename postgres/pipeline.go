package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentrt/agentrt/internal/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// execBatch is the dialect's ExecBatch: a write transaction's statements
// go to the server in one pipeline (pgx's batch protocol) on the writer's
// connection, inside the transaction it has open, and each one's result is
// read in order, up to the first that failed.
func execBatch(ctx context.Context, conn *sql.Conn, stmts []sqlstore.Statement) (affected []int64, err error) {
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("agentrt: postgres writer is not a pgx connection")
		}
		b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(stmts))}
		for _, st := range stmts {
			b.Queue(st.Query, st.Args...)
		}
		br := c.Conn().SendBatch(ctx, b)
		affected = make([]int64, 0, len(stmts))
		for range stmts {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			affected = append(affected, tag.RowsAffected())
		}
		return br.Close()
	})
	return affected, err
}
