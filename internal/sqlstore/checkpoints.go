package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"golang.org/x/mod/sumdb/tlog"
)

// The checkpoint tables (migration 9) are written only here, by the
// integrator's own transaction; the insert path never touches them.

var _ checkpoint.Store = (*Store)(nil)

// pendingPostgres reads events whose transaction ended before every one
// still running: no event can appear below that watermark later, while a
// smaller seq than one already committed still can above it.
const pendingPostgres = `SELECT e.seq, e.hash, pg_snapshot_xmin(pg_current_snapshot())::text::bigint
FROM events e
WHERE e.xid >= (?::bigint)::text::xid8 AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
	AND NOT EXISTS (SELECT 1 FROM event_leaves l WHERE l.seq = e.seq)
ORDER BY e.seq LIMIT ?`

// pendingSQLite reads events by seq: one writer commits at a time and seqs
// are never reused, so every event below a committed one is committed.
const pendingSQLite = `SELECT seq, hash, seq FROM events WHERE seq > ? ORDER BY seq LIMIT ?`

// CheckpointPending implements checkpoint.Store.
func (s *Store) CheckpointPending(ctx context.Context, floor int64, limit int) ([]checkpoint.Leaf, int64, error) {
	q := pendingSQLite
	if s.d.SharedWriters {
		q = pendingPostgres
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q), floor, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("agentrt: reading events to fold: %w", err)
	}
	defer rows.Close()
	var out []checkpoint.Leaf
	next := floor
	for rows.Next() {
		var l checkpoint.Leaf
		if err := rows.Scan(&l.Seq, &l.Hash, &next); err != nil {
			return nil, 0, err
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if s.d.SharedWriters && len(out) == limit {
		// Events below the watermark may remain: keep the floor.
		next = floor
	}
	return out, next, nil
}

// CheckpointAppend implements checkpoint.Store.
func (s *Store) CheckpointAppend(ctx context.Context, f checkpoint.Fold) error {
	if len(f.Leaves) == 0 {
		return errors.New("agentrt: a fold needs a leaf")
	}
	start := f.Leaves[0].Index
	werr := s.onFoldConn(ctx, func(c *sql.Conn) error {
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var size int64
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(size), 0) FROM checkpoints").Scan(&size); err != nil {
			return err
		}
		if size != start {
			return checkpoint.ErrConflict
		}
		if err := s.insertFold(ctx, tx, f); err != nil {
			return err
		}
		crashPoint("checkpoint-written")
		return tx.Commit()
	})
	if werr == nil || errors.Is(werr, checkpoint.ErrConflict) {
		return werr
	}
	// Two integrators at once: the second's rows collide on the leaf
	// index. Say so when the tree has moved, rather than parse the error.
	if latest, ok, err := s.CheckpointLatest(ctx); err == nil && ok && latest.Size != start {
		return checkpoint.ErrConflict
	}
	return fmt.Errorf("agentrt: writing checkpoint %d: %w", f.Checkpoint.Size, werr)
}

// onFoldConn runs a fold's transaction. Where other processes write at
// once (PostgreSQL), a fold's rows collide with no commit's, and the
// unique keys already settle two folds at once: it takes a connection of
// the writer's pool beside the engine's, so it neither waits behind the
// engine's queue of commits (which kept a fold waiting hundreds of
// milliseconds under load) nor holds that queue up. SQLite has one writer:
// the fold takes the engine writer's turn.
func (s *Store) onFoldConn(ctx context.Context, fn func(c *sql.Conn) error) error {
	if !s.d.SharedWriters {
		return s.OnWriter(ctx, fn)
	}
	if s.db == nil || s.readOnly {
		return ErrReadOnly
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("agentrt: connection for a fold: %w", err)
	}
	defer c.Close()
	return fn(c)
}

func (s *Store) insertFold(ctx context.Context, tx *sql.Tx, f checkpoint.Fold) error {
	const chunk = 200
	for i := 0; i < len(f.Leaves); i += chunk {
		part := f.Leaves[i:min(i+chunk, len(f.Leaves))]
		args := make([]any, 0, 2*len(part))
		for _, l := range part {
			args = append(args, l.Seq, l.Index)
		}
		q := "INSERT INTO event_leaves (seq, leaf) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?), ", len(part)), ", ")
		if _, err := tx.ExecContext(ctx, s.d.Rebind(q), args...); err != nil {
			return err
		}
	}
	for i := 0; i < len(f.Hashes); i += chunk {
		part := f.Hashes[i:min(i+chunk, len(f.Hashes))]
		args := make([]any, 0, 2*len(part))
		for j, h := range part {
			args = append(args, f.HashStart+int64(i+j), h[:])
		}
		q := "INSERT INTO tree_hashes (id, hash) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?), ", len(part)), ", ")
		if _, err := tx.ExecContext(ctx, s.d.Rebind(q), args...); err != nil {
			return err
		}
	}
	c := f.Checkpoint
	_, err := tx.ExecContext(ctx, s.d.Rebind(`INSERT INTO checkpoints (size, root, prev, hash, at, floor, body, signed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		c.Size, hex.EncodeToString(c.Root[:]), c.Prev, c.Hash, timeText(c.At), c.Floor, c.Body, c.Signed)
	return err
}

const checkpointColumns = "size, root, prev, hash, at, floor, body, signed"

func scanCheckpoint(sc scanner) (checkpoint.Checkpoint, error) {
	var c checkpoint.Checkpoint
	var root, at string
	if err := sc.Scan(&c.Size, &root, &c.Prev, &c.Hash, &at, &c.Floor, &c.Body, &c.Signed); err != nil {
		return c, err
	}
	raw, err := hex.DecodeString(root)
	if err != nil || len(raw) != tlog.HashSize {
		return c, fmt.Errorf("agentrt: checkpoint %d's root %q is not a hex SHA-256", c.Size, truncate(root, 80))
	}
	copy(c.Root[:], raw)
	if c.At, err = parseTime(at); err != nil {
		return c, fmt.Errorf("agentrt: checkpoint %d's %w", c.Size, err)
	}
	return c, nil
}

// CheckpointLatest implements checkpoint.Store.
func (s *Store) CheckpointLatest(ctx context.Context) (checkpoint.Checkpoint, bool, error) {
	row := s.rdb.QueryRowContext(ctx, "SELECT "+checkpointColumns+" FROM checkpoints ORDER BY size DESC LIMIT 1")
	c, err := scanCheckpoint(row)
	if errors.Is(err, sql.ErrNoRows) {
		return checkpoint.Checkpoint{}, false, nil
	}
	return c, err == nil, err
}

// CheckpointList implements checkpoint.Store.
func (s *Store) CheckpointList(ctx context.Context, after int64, limit int) ([]checkpoint.Checkpoint, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+checkpointColumns+" FROM checkpoints WHERE size > ? ORDER BY size LIMIT ?"), after, limit)
	return scanRows(rows, err, scanCheckpoint)
}

// CheckpointHashes implements checkpoint.Store.
func (s *Store) CheckpointHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	got := make(map[int64]tlog.Hash, len(indexes))
	if contiguous(indexes) {
		// A verifier's prefetch: one range scan, not lists of ids.
		q := "SELECT id, hash FROM tree_hashes WHERE id >= ? AND id <= ? ORDER BY id"
		rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q), indexes[0], indexes[len(indexes)-1])
		if err != nil {
			return nil, err
		}
		if err := scanTreeHashes(rows, got); err != nil {
			return nil, err
		}
		return pickHashes(indexes, got)
	}
	const chunk = 500
	for i := 0; i < len(indexes); i += chunk {
		part := indexes[i:min(i+chunk, len(indexes))]
		args := make([]any, len(part))
		for j, x := range part {
			args[j] = x
		}
		q := "SELECT id, hash FROM tree_hashes WHERE id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", ") + ")"
		rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q), args...)
		if err != nil {
			return nil, err
		}
		if err := scanTreeHashes(rows, got); err != nil {
			return nil, err
		}
	}
	return pickHashes(indexes, got)
}

// contiguous says xs counts up by one, and is long enough to scan.
func contiguous(xs []int64) bool {
	if len(xs) < 64 {
		return false
	}
	for i, x := range xs {
		if x != xs[0]+int64(i) {
			return false
		}
	}
	return true
}

// scanTreeHashes reads rows of (id, hash) into got and closes rows.
func scanTreeHashes(rows *sql.Rows, got map[int64]tlog.Hash) error {
	defer rows.Close()
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return err
		}
		if len(b) != tlog.HashSize {
			return fmt.Errorf("agentrt: tree hash %d is %d bytes, not %d", id, len(b), tlog.HashSize)
		}
		got[id] = tlog.Hash(b)
	}
	return rows.Err()
}

// pickHashes is the hashes of indexes, in order, from got.
func pickHashes(indexes []int64, got map[int64]tlog.Hash) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := got[x]
		if !ok {
			return nil, fmt.Errorf("%w: tree hash %d", agentrt.ErrNotFound, x)
		}
		out[i] = h
	}
	return out, nil
}

// CheckpointLeaves implements checkpoint.Store.
func (s *Store) CheckpointLeaves(ctx context.Context, from int64, limit int) ([]checkpoint.Leaf, error) {
	return s.leaves(ctx, `SELECT l.leaf, l.seq, COALESCE(substr(e.hash, 1, 128), '') FROM event_leaves l
LEFT JOIN events e ON e.seq = l.seq WHERE l.leaf >= ? ORDER BY l.leaf LIMIT ?`, from, limit)
}

// CheckpointLeavesOf reads the folded leaves of the events with seqs in
// [from, to] of one run, in seq order: a receipt's read.
func (s *Store) CheckpointLeavesOf(ctx context.Context, runID string, from, to int64) ([]checkpoint.Leaf, error) {
	return s.leaves(ctx, `SELECT l.leaf, l.seq, substr(e.hash, 1, 128) FROM events e
JOIN event_leaves l ON l.seq = e.seq WHERE e.run_id = ? AND e.seq >= ? AND e.seq <= ? ORDER BY e.seq`, runID, from, to)
}

func (s *Store) leaves(ctx context.Context, q string, args ...any) ([]checkpoint.Leaf, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind(q), args...)
	return scanRows(rows, err, func(sc scanner) (checkpoint.Leaf, error) {
		var l checkpoint.Leaf
		err := sc.Scan(&l.Index, &l.Seq, &l.Hash)
		return l, err
	})
}

// CheckpointUnfolded implements checkpoint.Store. Times compare as stored
// text, to the second.
func (s *Store) CheckpointUnfolded(ctx context.Context, before time.Time) (int64, int64, error) {
	var n, first int64
	err := s.rdb.QueryRowContext(ctx, s.d.Rebind(`SELECT COUNT(*), COALESCE(MIN(e.seq), 0) FROM events e
WHERE e.at <= ? AND NOT EXISTS (SELECT 1 FROM event_leaves l WHERE l.seq = e.seq)`), timeText(before.Truncate(time.Second))).Scan(&n, &first)
	return n, first, err
}
