package postgres

import (
	"context"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/jackc/pgx/v5"
)

// notifyChannel is the channel the triggers of migrations 0004 and 0012
// notify on, with the schema as payload.
const notifyChannel = "agentrt_runnable"

var _ agentrt.Waker = (*Store)(nil)

// Wakeups listens on a connection of its own for the notifications the
// triggers of migrations 0004 and 0012 send when a commit may have made a
// run claimable (a run enqueued, a lease released, an approval decided) in
// this store's schema (never for a claim, which makes nothing claimable),
// and delivers them, coalesced, on the channel until ctx is done. A lost
// connection is dialled again with a growing pause; meanwhile a worker
// polls, so nothing is missed, only later.
func (s *Store) Wakeups(ctx context.Context) (<-chan struct{}, error) {
	conn, schema, err := s.listen(ctx)
	if err != nil {
		return nil, wrap(s.name, "", err)
	}
	out := make(chan struct{}, 1)
	go func() {
		pause := 50 * time.Millisecond
		for {
			if conn == nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
				if pause < 5*time.Second {
					pause *= 2
				}
				c, sch, err := s.listen(ctx)
				if err != nil {
					continue
				}
				conn, schema, pause = c, sch, 50*time.Millisecond
				// Whatever committed while no one listened is found by a claim now.
				wake(out)
			}
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				conn.Close(context.Background())
				conn = nil
				if ctx.Err() != nil {
					return
				}
				continue
			}
			if n.Payload == schema {
				wake(out)
			}
		}
	}()
	return out, nil
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// listen opens the listening connection and reads the schema its
// notifications name.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, string, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, "", err
	}
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		conn.Close(context.Background())
		return nil, "", err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, "", err
	}
	return conn, schema, nil
}
