package approver

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/view"
)

// How many steps, at most, Local reads to find the policy's reason for an
// approval whose step is not the run's last. A waiting run's pending
// approval is always on its last step, so this only bounds Show of an old
// approval.
const (
	reasonPage  = 20
	reasonPages = 10
)

// Local is the Approver over a Store. Its decisions go through
// agentrt.Operator, bound to the hash the front end was shown.
type Local struct {
	store  agentrt.Store
	obs    agentrt.Observer
	closer func() error
	// Now is the clock expiry is judged and decisions are recorded on; nil
	// means the wall clock. It is for tests: in production the approver and
	// the runtime should read the same clock.
	Now func() time.Time
}

var _ Approver = (*Local)(nil)

// New returns the Approver over store; obs, when set, hears the events of
// every decision after it commits. Close does not close store.
func New(store agentrt.Store, obs agentrt.Observer) *Local {
	return &Local{store: store, obs: obs}
}

// Open opens the runs database at path with sqlite.OpenExisting, which
// refuses a symbolic link, a file others can write and any schema but this
// build's, and never creates or migrates one. Close closes it.
func Open(path string, obs agentrt.Observer) (*Local, error) {
	st, err := sqlite.OpenExisting(path, false)
	if err != nil {
		return nil, err
	}
	l := New(st, obs)
	l.closer = st.Close
	return l, nil
}

// Close closes the store if Open opened it.
func (l *Local) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer()
}

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

func (l *Local) operator() agentrt.Operator {
	return agentrt.Operator{Store: l.store, Observer: l.obs, Now: l.Now}
}

// expired judges a by the approver's clock, as the runtime judges it when
// deciding: at ExpiresAt and after, a pending approval is expired.
func (l *Local) expired(a agentrt.Approval) bool {
	if a.Status == agentrt.ApprovalExpired {
		return true
	}
	return a.Status == agentrt.ApprovalPending && !a.ExpiresAt.IsZero() && !l.now().Before(a.ExpiresAt)
}

// Pending returns the run's pending approvals, bounded, each with the
// policy's reason.
func (l *Local) Pending(ctx context.Context, runID string, limit int) ([]Approval, int, error) {
	if limit <= 0 || limit > MaxPending {
		return nil, 0, fmt.Errorf("approver: Pending limit must be from 1 to %d, got %d", MaxPending, limit)
	}
	run, err := l.store.GetRunCapped(ctx, runID)
	if err != nil {
		return nil, 0, err
	}
	if run.Status != agentrt.RunWaiting {
		return []Approval{}, 0, nil
	}
	page, total, err := l.store.ListApprovalsPage(ctx, runID, agentrt.ApprovalPending, limit, 0)
	if err != nil {
		return nil, 0, err
	}
	reasons := l.reasons(ctx, run)
	out := make([]Approval, 0, len(page))
	for _, a := range page {
		out = append(out, Approval{Approval: view.BoundApproval(a), Reason: reasons(a.StepID), Expired: l.expired(a)})
	}
	return out, total, nil
}

// Show returns one approval of the run, read whole and then bounded, so
// its Hash is the stored one.
func (l *Local) Show(ctx context.Context, runID, approvalID string) (Approval, error) {
	if runID == "" || approvalID == "" {
		return Approval{}, fmt.Errorf("%w: approval %q of run %q", agentrt.ErrNotFound, approvalID, runID)
	}
	a, err := l.store.GetApproval(ctx, runID, approvalID)
	if err != nil {
		return Approval{}, err
	}
	run, err := l.store.GetRunCapped(ctx, runID)
	if err != nil {
		return Approval{}, err
	}
	return Approval{Approval: view.BoundApproval(a), Reason: l.reasons(ctx, run)(a.StepID), Expired: l.expired(a)}, nil
}

// reasons returns a lookup of the policy's reason by step id. It reads the
// run's last step first, which is where a waiting run's approval is, and
// only if asked for another step pages back through at most reasonPages
// pages of reasonPage steps.
func (l *Local) reasons(ctx context.Context, run agentrt.Run) func(stepID string) string {
	found := map[string]string{}
	end := run.StepCount
	read := func(offset, n int) {
		steps, _, err := l.store.ListStepsPage(ctx, run.ID, n, offset)
		if err != nil {
			return
		}
		for _, st := range steps {
			if st.Policy != nil {
				found[st.ID] = view.BoundString(st.Policy.Reason)
			} else {
				found[st.ID] = ""
			}
		}
	}
	pages, last := 0, false
	return func(stepID string) string {
		if r, ok := found[stepID]; ok {
			return r
		}
		if !last && end > 0 {
			read(end-1, 1)
			end, last = end-1, true
		}
		for {
			if r, ok := found[stepID]; ok {
				return r
			}
			if end <= 0 || pages >= reasonPages {
				return ""
			}
			from := max(0, end-reasonPage)
			read(from, end-from)
			end = from
			pages++
		}
	}
}

// Approve grants the approval if its stored hash is still d.Hash. An
// approval past its expiry by the approver's clock is recorded expired by
// the runtime and agentrt.ErrApprovalExpired returned.
func (l *Local) Approve(ctx context.Context, d Answer) error {
	if err := d.check(); err != nil {
		return err
	}
	return l.operator().ApproveShown(ctx, d.RunID, d.ApprovalID, d.Hash, d.By, d.Note)
}

// Reject refuses the approval if its stored hash is still d.Hash, and
// cancels the run; it refuses as Approve does.
func (l *Local) Reject(ctx context.Context, d Answer) error {
	if err := d.check(); err != nil {
		return err
	}
	return l.operator().RejectShown(ctx, d.RunID, d.ApprovalID, d.Hash, d.By, d.Note)
}

// Cancel ends a run that has not ended; one that has is agentrt.ErrRunState.
func (l *Local) Cancel(ctx context.Context, runID, by, note string) error {
	switch {
	case runID == "":
		return &DecisionError{Field: "run_id"}
	case by == "":
		return &DecisionError{Field: "by"}
	}
	_, err := l.operator().Cancel(ctx, runID, by, note)
	return err
}
