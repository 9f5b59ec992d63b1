package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Config configures an Integrator.
type Config struct {
	// MaxBatch is the most events one checkpoint folds. Zero means 256;
	// it must not be negative or above 65536.
	MaxBatch int
	// Interval is how long Run waits between folds. Zero means 250 ms;
	// it must not be negative.
	Interval time.Duration
	// Signer signs each checkpoint as a note. Nil writes them unsigned.
	Signer note.Signer
	// Now is the clock checkpoints are stamped with. Nil is time.Now.
	Now func() time.Time
}

// DefaultConfig is the integrator's configuration with every default.
func DefaultConfig() Config {
	return Config{MaxBatch: 256, Interval: 250 * time.Millisecond}
}

// Integrator folds a database's committed events into checkpoints.
type Integrator struct {
	st  Store
	cfg Config
	// hook, when set by a test, runs after a fold's tree is computed and
	// before it is written.
	hook func()
	// folding is held through each Fold, so a process folds one batch at
	// a time; folds counts the Folds finished, so an Await that finds its
	// event unfolded knows whether someone folded since it looked.
	folding sync.Mutex
	folds   atomic.Int64
}

// NewIntegrator makes an integrator over st; cfg is validated, naming the field.
func NewIntegrator(st Store, cfg Config) (*Integrator, error) {
	switch {
	case cfg.MaxBatch < 0 || cfg.MaxBatch > 1<<16:
		return nil, fmt.Errorf("agentrt: checkpoint.Config.MaxBatch %d is outside 0 to 65536", cfg.MaxBatch)
	case cfg.Interval < 0:
		return nil, fmt.Errorf("agentrt: checkpoint.Config.Interval %v is negative", cfg.Interval)
	}
	d := DefaultConfig()
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = d.MaxBatch
	}
	if cfg.Interval == 0 {
		cfg.Interval = d.Interval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Integrator{st: st, cfg: cfg}, nil
}

// Fold folds every event pending now, a checkpoint per MaxBatch events,
// and returns how many it folded and the latest checkpoint (ok false when
// the database has none). A fold another integrator won is not an error:
// Fold reads the new tree and goes on.
func (in *Integrator) Fold(ctx context.Context) (folded int, latest Checkpoint, ok bool, err error) {
	in.folding.Lock()
	defer in.folding.Unlock()
	return in.fold(ctx)
}

// fold is Fold with in.folding held.
func (in *Integrator) fold(ctx context.Context) (folded int, latest Checkpoint, ok bool, err error) {
	defer in.folds.Add(1)
	for {
		n, c, cok, err := in.foldOnce(ctx)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return folded, latest, ok, err
		}
		folded += n
		latest, ok = c, cok
		if n < in.cfg.MaxBatch {
			return folded, latest, ok, nil
		}
	}
}

// foldOnce writes at most one checkpoint.
func (in *Integrator) foldOnce(ctx context.Context) (int, Checkpoint, bool, error) {
	prev, ok, err := in.st.CheckpointLatest(ctx)
	if err != nil {
		return 0, Checkpoint{}, false, err
	}
	leaves, floor, err := in.st.CheckpointPending(ctx, prev.Floor, in.cfg.MaxBatch)
	if err != nil || len(leaves) == 0 {
		return 0, prev, ok, err
	}
	r := &foldReader{ctx: ctx, st: in.st, start: tlog.StoredHashIndex(0, prev.Size)}
	for i := range leaves {
		n := prev.Size + int64(i)
		hs, err := tlog.StoredHashes(n, []byte(leaves[i].Hash), r)
		if err != nil {
			return 0, Checkpoint{}, false, fmt.Errorf("agentrt: folding event %d: %w", leaves[i].Seq, err)
		}
		r.added = append(r.added, hs...)
		leaves[i].Index = n
	}
	size := prev.Size + int64(len(leaves))
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return 0, Checkpoint{}, false, fmt.Errorf("agentrt: the tree's hash at %d: %w", size, err)
	}
	c, err := Make(size, root, prev.Hash, in.cfg.Now(), in.cfg.Signer)
	if err != nil {
		return 0, Checkpoint{}, false, err
	}
	c.Floor = floor
	if in.hook != nil {
		in.hook()
	}
	if err := in.st.CheckpointAppend(ctx, Fold{Leaves: leaves, HashStart: r.start, Hashes: r.added, Checkpoint: c}); err != nil {
		return 0, Checkpoint{}, false, err
	}
	return len(leaves), c, true, nil
}

// Run folds every Interval until ctx ends, while it holds the database's
// integrator role; when another process holds it, Run tries again each
// Interval, so a standby takes over when the holder dies. It returns nil
// when ctx ends.
func (in *Integrator) Run(ctx context.Context) error {
	el, _ := in.st.(Elector)
	t := time.NewTicker(in.cfg.Interval)
	defer t.Stop()
	release := func() {}
	held := el == nil
	defer func() { release() }()
	for {
		if !held {
			rel, ok, err := el.CheckpointElect(ctx)
			if err != nil && ctx.Err() == nil {
				return err
			}
			if ok {
				held, release = true, rel
			}
		}
		if held {
			if _, _, _, err := in.Fold(ctx); err != nil && ctx.Err() == nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// foldReader reads the stored tree's hashes from the store and the ones a
// fold computes from memory.
type foldReader struct {
	ctx   context.Context
	st    Store
	start int64
	added []tlog.Hash
}

func (r *foldReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var stored []int64
	for _, x := range indexes {
		if x < r.start {
			stored = append(stored, x)
		}
	}
	var got []tlog.Hash
	if len(stored) > 0 {
		var err error
		if got, err = r.st.CheckpointHashes(r.ctx, stored); err != nil {
			return nil, err
		}
	}
	j := 0
	for i, x := range indexes {
		switch {
		case x < r.start:
			out[i] = got[j]
			j++
		case x-r.start < int64(len(r.added)):
			out[i] = r.added[x-r.start]
		default:
			return nil, fmt.Errorf("agentrt: tree hash %d is not stored yet", x)
		}
	}
	return out, nil
}

// Await returns once a checkpoint folds ev (an event as Update returned
// it, with its seq), folding in this process if nothing has folded it
// yet: the synchronous mode, where a commit waits for the checkpoint that
// folds it (agentrt.EngineConfig.AwaitCheckpoint). Waiters coalesce: one
// fold serves every commit pending when it starts. Folds from several
// processes race safely (a loser writes nothing and reads the new tree).
// On PostgreSQL an event is folded only once every transaction older
// than its own has ended, so Await waits for those too. It returns ctx's
// error if ctx ends first, or the store's.
func (in *Integrator) Await(ctx context.Context, ev agentrt.Event) error {
	backoff := time.Millisecond
	for {
		seen := in.folds.Load()
		leaves, err := in.st.CheckpointLeavesOf(ctx, ev.RunID, ev.Seq, ev.Seq)
		if err != nil || len(leaves) > 0 {
			return err
		}
		in.folding.Lock()
		if in.folds.Load() != seen {
			in.folding.Unlock()
			continue // a fold ended while this one looked: look again
		}
		_, _, _, err = in.fold(ctx)
		in.folding.Unlock()
		if err != nil {
			return err
		}
		if leaves, err = in.st.CheckpointLeavesOf(ctx, ev.RunID, ev.Seq, ev.Seq); err != nil || len(leaves) > 0 {
			return err
		}
		// Below the watermark only when older transactions end: wait.
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, in.cfg.Interval)
	}
}
