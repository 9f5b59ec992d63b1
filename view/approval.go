package view

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
)

// MaxCandidates is how many pending approvals an ambiguity names.
const MaxCandidates = 20

// Sentinels for the approval an operator means. Struct errors below carry
// the details and match them with errors.Is.
var (
	// ErrNoPendingApproval: the run has no pending approval to decide.
	ErrNoPendingApproval = errors.New("agentrt: the run has no pending approval")
	// ErrAmbiguousApproval: the run has several pending approvals and none
	// was named.
	ErrAmbiguousApproval = errors.New("agentrt: the run has more than one pending approval")
	// ErrRunNotWaiting: the run is not waiting for an approval.
	ErrRunNotWaiting = errors.New("agentrt: the run is not waiting for approval")
)

// RunNotWaitingError says what state the run is in instead.
type RunNotWaitingError struct {
	RunID  string
	Status agentrt.RunStatus
}

func (e *RunNotWaitingError) Error() string {
	return fmt.Sprintf("agentrt: run %s is %s, not waiting for approval", e.RunID, e.Status)
}

// Is matches ErrRunNotWaiting.
func (e *RunNotWaitingError) Is(target error) bool { return target == ErrRunNotWaiting }

// AmbiguousApprovalError names the pending approvals an operator must choose
// between: at most MaxCandidates of them, and how many there are.
type AmbiguousApprovalError struct {
	RunID      string
	Candidates []string
	Total      int
}

func (e *AmbiguousApprovalError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentrt: run %s has %d pending approvals; name one with -approval: %s", e.RunID, e.Total, strings.Join(e.Candidates, ", "))
	if more := e.Total - len(e.Candidates); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	return b.String()
}

// Is matches ErrAmbiguousApproval.
func (e *AmbiguousApprovalError) Is(target error) bool { return target == ErrAmbiguousApproval }

// PendingApproval is the rule for the approval an operator means, read
// whole (GetApproval) because a decision binds to its hash:
//
//   - the run must exist (agentrt.ErrNotFound) and be waiting
//     (*RunNotWaitingError);
//   - a named approval must be one of the run's (agentrt.ErrNotFound) and
//     pending (agentrt.ErrNotPending);
//   - with none named, the run must have exactly one pending approval:
//     none is ErrNoPendingApproval, several an *AmbiguousApprovalError
//     naming at most MaxCandidates.
//
// Only the run row, one page of candidate ids and the chosen approval are
// read.
func PendingApproval(ctx context.Context, store agentrt.StoreReader, runID, approvalID string) (agentrt.Approval, error) {
	r, err := store.GetRunCapped(ctx, runID)
	if err != nil {
		return agentrt.Approval{}, err
	}
	if r.Status != agentrt.RunWaiting {
		return agentrt.Approval{}, &RunNotWaitingError{RunID: r.ID, Status: r.Status}
	}
	if approvalID == "" {
		page, total, err := store.ListApprovalsPage(ctx, runID, agentrt.ApprovalPending, MaxCandidates, 0)
		if err != nil {
			return agentrt.Approval{}, err
		}
		switch {
		case total == 0 || len(page) == 0:
			return agentrt.Approval{}, fmt.Errorf("%w: run %s", ErrNoPendingApproval, runID)
		case total > 1:
			ids := make([]string, len(page))
			for i, a := range page {
				ids[i] = a.ID
			}
			return agentrt.Approval{}, &AmbiguousApprovalError{RunID: runID, Candidates: ids, Total: total}
		}
		approvalID = page[0].ID
	}
	a, err := store.GetApproval(ctx, runID, approvalID)
	if err != nil {
		return agentrt.Approval{}, err
	}
	if a.Status != agentrt.ApprovalPending {
		return agentrt.Approval{}, fmt.Errorf("%w: approval %s of run %s is %s", agentrt.ErrNotPending, a.ID, runID, a.Status)
	}
	return a, nil
}
