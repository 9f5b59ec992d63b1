package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/sqlstore"
)

// ErrWALRetained is returned, with what was erased, when an erasure
// committed but the write-ahead log could not be emptied: another
// connection was reading. Until a checkpoint empties it, the log may hold
// pages from before the erasure. Checkpoint again when readers are done.
var ErrWALRetained = errors.New("agentrt: the erasure committed, but the write-ahead log could not be emptied while another connection reads")

var _ agentrt.Eraser = (*Store)(nil)

var _ agentrt.Settler = (*Store)(nil)

// EraseRuns erases the runs' content (agentrt.Eraser). The writer runs
// with secure_delete on, so freed pages and cells are zeroed as they are
// freed; until Settle, the write-ahead log may still hold pages from
// before the erasure.
func (s *Store) EraseRuns(ctx context.Context, r agentrt.EraseRequest) ([]agentrt.ErasedRun, []agentrt.Event, error) {
	out, evs, err := s.Store.EraseRuns(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	eraseCommitted()
	return out, evs, nil
}

// Settle empties the write-ahead log (Checkpoint), so the database, its
// log and its shared-memory file hold no copy of what was erased.
func (s *Store) Settle(ctx context.Context) error { return s.Checkpoint(ctx) }

// Checkpoint copies the write-ahead log into the database and truncates
// it to nothing. It returns ErrWALRetained when a reader kept it.
func (s *Store) Checkpoint(ctx context.Context) error {
	return s.OnWriter(ctx, func(c *sql.Conn) error {
		var busy, logFrames, done int
		if err := c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
			return err
		}
		if busy != 0 {
			return fmt.Errorf("%w (%d of %d frames copied)", ErrWALRetained, done, logFrames)
		}
		return nil
	})
}

// EraseHook, when set by a test, is called after an erasure commits and
// before its checkpoint.
var EraseHook func()

func eraseCommitted() {
	if EraseHook != nil {
		EraseHook()
	}
}

// Vacuum rebuilds the database file, so no page freed before secure_delete
// was on (a database written by an older build) keeps a copy of erased
// content, and empties the write-ahead log.
func (s *Store) Vacuum(ctx context.Context) error {
	if err := s.OnWriter(ctx, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, "VACUUM")
		return err
	}); err != nil {
		return err
	}
	return s.Checkpoint(ctx)
}

// SetCrashHook sets the function a test has called at each point of an
// erasure inside its transaction ("erase-begun", "erase-cleared"), where it
// may kill its process; nil removes it. Only the backends import the SQL
// layer (ADR 0011), so tests elsewhere reach its hooks through here.
func SetCrashHook(f func(point string)) { sqlstore.CrashHook = f }

// SetSaltSource sets where new runs' salts are drawn from: tests whose
// golden files hold chain hashes draw them from a fixed stream.
func SetSaltSource(r io.Reader) { sqlstore.SaltSource = r }
