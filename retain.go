package agentrt

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RetainOptions says which runs retention erases.
type RetainOptions struct {
	// FinishedBefore is the cut: runs that ended strictly before it.
	FinishedBefore time.Time
	// Statuses, when not empty, keeps only runs that ended in one of them.
	Statuses []RunStatus
	// Batch is how many runs one transaction erases; zero means 100, at
	// most MaxEraseBatch.
	Batch int
	// By and Reason are recorded in each run.erased event.
	By, Reason string
	// DryRun lists the runs and erases nothing.
	DryRun bool
	// Progress, when set, hears each batch after it commits (or, for a
	// dry run, is listed). An error from it stops retention there: every
	// batch before is erased, every run after untouched.
	Progress func(batch []ErasedRun) error
}

// RetainReport is what retention did.
type RetainReport struct {
	Erased  int `json:"erased"`
	Events  int `json:"events"`
	Batches int `json:"batches"`
	// Would lists, for a dry run, the runs that would be erased.
	Would []string `json:"would,omitempty"`
	// Refused lists the runs the store would not erase, and why.
	Refused []RetainRefusal `json:"refused,omitempty"`
}

// RetainRefusal is a run retention left as it was.
type RetainRefusal struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

// DefaultRetainBatch is RetainOptions.Batch's zero value.
const DefaultRetainBatch = 100

// settleEvery is how many batches retention erases between settlements:
// the log a store settles grows with each batch until then.
const settleEvery = 10

// settle settles the store's files, if it is a Settler.
func (o Operator) settle(ctx context.Context) error {
	if s, ok := o.Store.(Settler); ok {
		return s.Settle(ctx)
	}
	return nil
}

// Retain erases every terminal run that ended before the cut, oldest
// first, a batch to a transaction: a crash leaves each run wholly erased
// or untouched, and running Retain again goes on from there.
func (o Operator) Retain(ctx context.Context, opt RetainOptions) (RetainReport, error) {
	var rep RetainReport
	batch := opt.Batch
	if batch == 0 {
		batch = DefaultRetainBatch
	}
	if batch < 1 || batch > MaxEraseBatch {
		return rep, &ConfigError{Field: "Batch", Reason: fmt.Sprintf("must be 1 to %d", MaxEraseBatch)}
	}
	for _, s := range opt.Statuses {
		if !s.Terminal() {
			return rep, &ConfigError{Field: "Statuses", Reason: fmt.Sprintf("%s is not a status a run ends in", s)}
		}
	}
	er, ok := o.Store.(Eraser)
	if !ok {
		return rep, ErrNotErasable
	}
	// A run the store refuses stays first in line; offset steps past it.
	for offset := 0; ; {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		runs, err := er.ErasableRuns(ctx, ErasableQuery{FinishedBefore: opt.FinishedBefore, Statuses: opt.Statuses, Limit: batch, Offset: offset})
		if err != nil {
			return rep, err
		}
		if len(runs) == 0 {
			if opt.DryRun || rep.Batches == 0 {
				return rep, nil
			}
			return rep, o.settle(ctx)
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		if opt.DryRun {
			rep.Would = append(rep.Would, ids...)
			offset += len(ids)
			continue
		}
		out, err := o.eraseRuns(ctx, ids, opt.By, opt.Reason)
		if len(out) == 0 {
			var ce *ConfigError
			if errors.As(err, &ce) || errors.Is(err, ErrNotErasable) {
				return rep, err
			}
			// One refused run fails its batch: erase the batch run by run.
			for _, id := range ids {
				one, err := o.eraseRuns(ctx, []string{id}, opt.By, opt.Reason)
				if len(one) == 0 {
					if !errors.Is(err, ErrRunState) {
						return rep, err
					}
					rep.Refused = append(rep.Refused, RetainRefusal{id, err.Error()})
					offset++
					continue
				}
				out = append(out, one[0])
			}
		}
		rep.Batches++
		if rep.Batches%settleEvery == 0 {
			if err := o.settle(ctx); err != nil {
				return rep, err
			}
		}
		rep.Erased += len(out)
		for _, r := range out {
			rep.Events += r.Events
		}
		if opt.Progress != nil {
			if err := opt.Progress(out); err != nil {
				_ = o.settle(ctx)
				return rep, err
			}
		}
	}
}
