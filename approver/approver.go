package approver

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt"
)

// MaxPending is the most approvals one Pending call returns.
const MaxPending = 100

// ErrDecision: a decision or cancel lacks a field it needs (the run, the
// approval, or who decided). A missing hash is agentrt.ErrApprovalChanged
// instead, as for any hash that is not the stored one.
var ErrDecision = errors.New("approver: incomplete decision")

// DecisionError names the field a decision lacks. It matches ErrDecision.
type DecisionError struct {
	Field string
}

func (e *DecisionError) Error() string {
	return fmt.Sprintf("approver: incomplete decision: %s is required", e.Field)
}

// Is matches ErrDecision.
func (e *DecisionError) Is(target error) bool { return target == ErrDecision }

// Approval is an approval as a front end shows it: the stored approval
// with its model-chosen fields bounded (view.BoundApproval; ids and Hash
// are never changed), the policy's reason, and whether it has expired by
// the approver's clock.
type Approval struct {
	agentrt.Approval
	// Reason is the policy's reason for asking, bounded; empty when the
	// step that asked could not be found within a bounded read.
	Reason string `json:"reason,omitempty"`
	// Expired is true for an approval whose status is expired, and for one
	// still pending whose ExpiresAt has passed by the approver's clock. A
	// rejected approval is never Expired.
	Expired bool `json:"expired"`
}

// Answer is an operator's answer to one approval. Hash is the Hash of
// the Approval the operator was shown; a decision without it is refused.
type Answer struct {
	RunID      string `json:"run_id"`
	ApprovalID string `json:"approval_id"`
	Hash       string `json:"hash"`
	By         string `json:"by"`
	Note       string `json:"note,omitempty"`
}

// check refuses a decision missing a field, naming the first.
func (d Answer) check() error {
	switch {
	case d.RunID == "":
		return &DecisionError{Field: "run_id"}
	case d.ApprovalID == "":
		return &DecisionError{Field: "approval_id"}
	case d.By == "":
		return &DecisionError{Field: "by"}
	case d.Hash == "":
		return fmt.Errorf("%w: approval %s: a decision must name the hash it was shown", agentrt.ErrApprovalChanged, d.ApprovalID)
	}
	return nil
}

// Approver is what an approval front end needs. Every method names one run;
// nothing lists runs.
type Approver interface {
	// Pending returns at most limit (1..MaxPending) of the run's pending
	// approvals, oldest first, and how many there are. A run that is not
	// waiting has none; a run that does not exist is agentrt.ErrNotFound.
	Pending(ctx context.Context, runID string, limit int) ([]Approval, int, error)
	// Show returns one approval of the run, whatever its status. An
	// approval of another run is agentrt.ErrNotFound, as is one that does
	// not exist.
	Show(ctx context.Context, runID, approvalID string) (Approval, error)
	// Approve grants the approval if its stored hash is still d.Hash.
	Approve(ctx context.Context, d Answer) error
	// Reject refuses the approval if its stored hash is still d.Hash,
	// and cancels its run.
	Reject(ctx context.Context, d Answer) error
	// Cancel ends a run that has not ended, and every approval of it
	// still pending.
	Cancel(ctx context.Context, runID, by, note string) error
}
