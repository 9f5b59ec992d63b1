package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/eventlog"
)

// Sink receives each event once it is committed, in seq order. An error
// stops the Follower with the cursor before that event, so the next Follow
// offers it again.
type Sink func(agentrt.Event) error

// Bounds and defaults of Follower's settings.
const (
	DefaultInterval = 250 * time.Millisecond
	MaxInterval     = time.Minute
	DefaultPageSize = 500
	MaxPageSize     = 10000
)

// SettledReader is the read a Follower prefers when its Store offers it:
// events after the one at seq after in an order that never places a
// committed event behind one already read. The SQLite and PostgreSQL
// stores offer it; on PostgreSQL, where seqs become visible out of commit
// order, it reads only what the checkpoint integrator's watermark says no
// transaction still running can precede (ADR 0015).
type SettledReader interface {
	ListEventsSettled(ctx context.Context, runID string, after int64, limit int) ([]agentrt.Event, error)
}

// Follower delivers the events of a store to a Sink in commit order, from
// where its Cursor says it stopped. Over a store that is a SettledReader it
// reads with that, so it never passes over an event that commits late with
// a smaller seq; there seqs need not ascend (on PostgreSQL the order is the
// order the events' transactions became safe), and an event is delivered
// only once every transaction that began before it has ended.
type Follower struct {
	// Store is read with ListEventsSettled (SettledReader) or else
	// ListEventsAfter and, by Head, EventHash. Open it
	// read-only: the Follower never writes to it. Required.
	Store agentrt.StoreReader
	// RunID limits delivery to one run; "" delivers every run's events.
	RunID string
	// Cursor is where delivery resumes and what each page saves. Nil starts
	// at the beginning and remembers nothing. Over a SettledReader on
	// PostgreSQL it must hold 0 or the seq of an event this store holds
	// (one the Follower delivered): the read resumes at that event's place
	// in its order, and seq - 1 may be no event there.
	Cursor Cursor
	// Interval is how long to wait before looking again once caught up.
	// Zero is DefaultInterval; at most MaxInterval.
	Interval time.Duration
	// PageSize is how many events one read returns at most. Zero is
	// DefaultPageSize; at most MaxPageSize. A hard kill re-delivers at most
	// one page.
	PageSize int
	// Once returns once every event committed so far is delivered, instead
	// of waiting for more.
	Once bool
	// CaughtUp, when set, is called with the last delivered seq each time
	// the Follower reaches the end of what is committed after having been
	// behind (and the first time it gets there), before it waits.
	CaughtUp func(seq int64)
}

// settings validates f and fills in its defaults.
func (f *Follower) settings() (interval time.Duration, pageSize int, err error) {
	if f.Store == nil {
		return 0, 0, errors.New("export: Follower needs a Store")
	}
	interval, pageSize = f.Interval, f.PageSize
	switch {
	case interval < 0 || interval > MaxInterval:
		return 0, 0, fmt.Errorf("export: Follower.Interval must be from 0 to %v, got %v", MaxInterval, interval)
	case pageSize < 0 || pageSize > MaxPageSize:
		return 0, 0, fmt.Errorf("export: Follower.PageSize must be from 0 to %d, got %d", MaxPageSize, pageSize)
	}
	if interval == 0 {
		interval = DefaultInterval
	}
	if pageSize == 0 {
		pageSize = DefaultPageSize
	}
	return interval, pageSize, nil
}

func (f *Follower) load() (int64, error) {
	if f.Cursor == nil {
		return 0, nil
	}
	seq, err := f.Cursor.Load()
	if err != nil {
		return 0, err
	}
	if seq < 0 {
		return 0, fmt.Errorf("export: cursor holds a negative seq %d", seq)
	}
	return seq, nil
}

func (f *Follower) save(seq int64) error {
	if f.Cursor == nil {
		return nil
	}
	if err := f.Cursor.Save(seq); err != nil {
		return fmt.Errorf("export: saving the cursor at seq %d: %w", seq, err)
	}
	return nil
}

// reader is the page read Follow uses, and whether it is the settled one
// (whose seqs need not ascend).
func (f *Follower) reader() (read func(ctx context.Context, runID string, after int64, limit int) ([]agentrt.Event, error), settled bool) {
	if sr, ok := f.Store.(SettledReader); ok {
		return sr.ListEventsSettled, true
	}
	return f.Store.ListEventsAfter, false
}

// Follow delivers events to sink until ctx is cancelled (then it returns
// nil), until it has caught up when Once is set (nil), or until the sink,
// the store or the cursor fails (that error). Whichever way it stops, the
// cursor names the last event the sink accepted.
func (f *Follower) Follow(ctx context.Context, sink Sink) (err error) {
	interval, pageSize, err := f.settings()
	if err != nil {
		return err
	}
	if sink == nil {
		return errors.New("export: Follow needs a sink")
	}
	seq, err := f.load()
	if err != nil {
		return err
	}
	saved := seq
	defer func() {
		// The cursor is saved on the way out whatever stopped us, so a clean
		// stop re-delivers nothing.
		if seq != saved {
			if serr := f.save(seq); err == nil {
				err = serr
			}
		}
	}()
	behind := true
	var timer *time.Timer
	read, settled := f.reader()
	for {
		if ctx.Err() != nil {
			return nil
		}
		page, err := read(ctx, f.RunID, seq, pageSize)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("export: reading events after seq %d: %w", seq, err)
		}
		for _, e := range page {
			if e.Seq == seq || (!settled && e.Seq < seq) {
				return fmt.Errorf("export: the store returned seq %d after seq %d", e.Seq, seq)
			}
			if err := sink(e); err != nil {
				return fmt.Errorf("export: the sink refused event %d: %w", e.Seq, err)
			}
			seq = e.Seq
			if ctx.Err() != nil {
				return nil
			}
		}
		if len(page) > 0 {
			if err := f.save(seq); err != nil {
				return err
			}
			saved = seq
			behind = true
			continue
		}
		// Only an empty page means caught up: a page may end early to
		// bound its bytes.
		if behind && f.CaughtUp != nil {
			f.CaughtUp(seq)
		}
		behind = false
		if f.Once {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(interval)
			defer timer.Stop()
		} else {
			timer.Reset(interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// Head is where a Follower stands: the last event it delivered, that
// event's run and the hash of the run's chain there, and the database's
// latest checkpoint. Since events chain per run (ADR 0015), an event's
// hash vouches for its run up to it; the checkpoint is what vouches for
// every run at once.
type Head struct {
	// Seq is the last delivered event's seq, as the cursor holds it; 0
	// when nothing was delivered or there is no cursor.
	Seq int64 `json:"seq"`
	// RunID is that event's run, and Hash its stored chain hash: the run's
	// head as far as delivered (verify -head SEQ:HASH vouches for the run
	// up to it).
	RunID string `json:"run_id,omitempty"`
	Hash  string `json:"hash,omitempty"`
	// Checkpoint is the latest checkpoint, nil when the store keeps none
	// or none is made yet; its Kept text is what verify -head SIZE:ROOT
	// takes. Folded says it folds the event at Seq.
	Checkpoint *checkpoint.Checkpoint `json:"checkpoint,omitempty"`
	Folded     bool                   `json:"folded"`
}

// Head reads where f stands. The event part moves only as events are
// delivered; the checkpoint is the latest whenever Head is called.
func (f *Follower) Head(ctx context.Context) (Head, error) {
	var h Head
	if f.Store == nil {
		return h, errors.New("export: Follower needs a Store")
	}
	cs, cerr := checkpoint.For(f.Store)
	if cerr == nil {
		c, ok, err := cs.CheckpointLatest(ctx)
		if err != nil {
			return h, fmt.Errorf("export: reading the latest checkpoint: %w", err)
		}
		if ok {
			h.Checkpoint = &c
		}
	}
	seq, err := f.load()
	if err != nil || seq == 0 {
		return h, err
	}
	evs, err := f.Store.ListEventsAfter(ctx, "", seq-1, 1)
	if err != nil {
		return h, fmt.Errorf("export: reading delivered event %d: %w", seq, err)
	}
	if len(evs) == 0 || evs[0].Seq != seq {
		return h, fmt.Errorf("export: delivered event %d is not in the store", seq)
	}
	h.Seq, h.RunID = seq, evs[0].RunID
	if h.Hash, err = f.Store.EventHash(ctx, seq); err != nil {
		return h, fmt.Errorf("export: the hash of delivered event %d: %w", seq, err)
	}
	if h.Checkpoint != nil {
		leaves, err := cs.CheckpointLeavesOf(ctx, h.RunID, seq, seq)
		if err != nil {
			return h, fmt.Errorf("export: reading whether event %d is folded: %w", seq, err)
		}
		h.Folded = len(leaves) == 1 && leaves[0].Index < h.Checkpoint.Size
	}
	return h, nil
}

// JSONL returns a Sink that writes each event to w as one line of JSON,
// exactly as eventlog.JSONL does, and reports a failed write as the sink's
// error, so the Follower stops before the event it could not write.
func JSONL(w io.Writer) Sink {
	obs, werr := eventlog.JSONLWithErr(w)
	return func(e agentrt.Event) error {
		obs(e)
		return werr()
	}
}
