package checkpoint

import (
	"context"
	"errors"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// Store is what the integrator and the verifier need of a database. The
// SQLite and PostgreSQL backends' stores implement it; find it on an
// agentrt.Store by type assertion (For).
type Store interface {
	// CheckpointPending reads at most limit committed events that are not
	// folded yet and are safe to fold, in seq order, and the watermark the
	// read used: every event below it (a seq on SQLite, a transaction id on
	// PostgreSQL) was committed and visible to the read. floor is the
	// latest checkpoint's Floor: nothing below it is unfolded.
	CheckpointPending(ctx context.Context, floor int64, limit int) (leaves []Leaf, watermark int64, err error)
	// CheckpointAppend writes a fold in one transaction: each leaf's index,
	// the tree's new stored hashes and the checkpoint. A fold that does
	// not start at the stored tree's size (another integrator folded
	// first) writes nothing and is ErrConflict.
	CheckpointAppend(ctx context.Context, f Fold) error
	// CheckpointLatest reads the newest checkpoint; ok is false when there
	// is none.
	CheckpointLatest(ctx context.Context) (c Checkpoint, ok bool, err error)
	// CheckpointList reads at most limit checkpoints with Size > after, in
	// size order.
	CheckpointList(ctx context.Context, after int64, limit int) ([]Checkpoint, error)
	// CheckpointHashes reads stored tree hashes by tlog's stored-hash index.
	CheckpointHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// CheckpointLeaves reads at most limit folded leaves with Index >=
	// from, in index order, each with the hash its event has now ("" when
	// the event is gone).
	CheckpointLeaves(ctx context.Context, from int64, limit int) ([]Leaf, error)
	// CheckpointLeavesOf reads the folded leaves of one run's events with
	// seqs in [from, to], in seq order.
	CheckpointLeavesOf(ctx context.Context, runID string, from, to int64) ([]Leaf, error)
	// CheckpointUnfolded counts the events committed at or before before
	// that are not folded, and names the smallest such seq.
	CheckpointUnfolded(ctx context.Context, before time.Time) (count, first int64, err error)
}

// Elector is how a backend makes its integrator one per database.
type Elector interface {
	// CheckpointElect takes the database's integrator role if no one holds
	// it: ok false when another holder has it. release gives it back; a
	// holder that dies gives it back with its session or process.
	CheckpointElect(ctx context.Context) (release func(), ok bool, err error)
}

// ErrConflict is what CheckpointAppend returns when another integrator
// folded first.
var ErrConflict = errors.New("agentrt: another integrator folded these events first")

// ErrUnsupported is what For returns for a store with no checkpoints.
var ErrUnsupported = errors.New("agentrt: this store keeps no checkpoints")

// For finds the checkpoint Store on a store.
func For(st any) (Store, error) {
	s, ok := st.(Store)
	if !ok {
		return nil, ErrUnsupported
	}
	return s, nil
}

// Leaf is one event as a leaf of the tree.
type Leaf struct {
	// Index is the leaf's index in the tree (0 before it is folded).
	Index int64
	// Seq is the event's seq.
	Seq int64
	// Hash is the event's stored chain hash: the leaf's input.
	Hash string
}

// Fold is one batch the integrator writes.
type Fold struct {
	// Leaves are the events folded, with their indexes from the tree's
	// size before the fold.
	Leaves []Leaf
	// HashStart is the stored-hash index of Hashes[0].
	HashStart int64
	// Hashes are the tree's new stored hashes.
	Hashes []tlog.Hash
	// Checkpoint is the checkpoint the fold ends with.
	Checkpoint Checkpoint
}
