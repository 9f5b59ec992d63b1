package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/sqlstore"
)

// integratorLock is the advisory lock key of the database's one integrator
// ("ckpoint" in ASCII), distinct from the migration lock.
const integratorLock = 0x636b706f696e74

var _ checkpoint.Elector = (*Store)(nil)

// CheckpointElect implements checkpoint.Elector with a session advisory
// lock on a connection held until release: a holder that dies loses its
// session and with it the role, and a standby's next try takes it.
func (s *Store) CheckpointElect(ctx context.Context) (func(), bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(integratorLock)).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, err
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(integratorLock)); err != nil {
				// The session may hold the lock still: end it.
				conn.Conn().Close(ctx)
			}
			conn.Release()
		})
	}, true, nil
}

// SetCrashHook sets the function a test has called at each crash point of
// the SQL layer's transactions ("checkpoint-written", inside a fold's
// transaction before its commit), where it may kill its process; nil
// removes it.
func SetCrashHook(f func(point string)) { sqlstore.CrashHook = f }
