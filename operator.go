package agentrt

import (
	"context"
	"fmt"
	"time"
)

// Operator holds what ApproveShown, RejectShown and Cancel need: a Store, an
// Observer, and the clock decisions are recorded on. Its methods are the
// package functions of the same names on a chosen clock, not another way to
// decide: a process that will not resume the run can still decide it, and a
// test or a harness records on its own clock.
type Operator struct {
	Store    Store
	Observer Observer
	// Now is the clock decisions are recorded on; nil means the wall clock.
	Now func() time.Time
}

// now is in UTC without a monotonic reading, as the store keeps times, so
// the events an observer hears equal the stored ones.
func (o Operator) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

func (o Operator) write(ctx context.Context, fn func(Tx) error) error {
	evs, err := o.Store.Update(ctx, fn)
	if err != nil {
		return err
	}
	if o.Observer != nil {
		for _, e := range evs {
			o.Observer(e)
		}
	}
	return nil
}

// changeRow reads a row with read and runs apply on it in one write
// transaction, at one now, and returns the row as apply left it.
func changeRow[T any](ctx context.Context, o Operator, read func(Tx) (T, error), apply func(tx Tx, row *T, now time.Time) error) (T, error) {
	now := o.now()
	var row T
	err := o.write(ctx, func(tx Tx) error {
		var err error
		if row, err = read(tx); err != nil {
			return err
		}
		return apply(tx, &row, now)
	})
	return row, err
}

// ApproveShown grants a pending approval only if its stored hash is still
// shownHash, the hash of what the approver read (Approval.Hash of the
// approval they were shown); the comparison is inside the deciding
// transaction and the update is conditional on it. It is the one way to
// grant: there is no form that decides whatever the row holds now. The run
// stays WAITING until Resume.
//
// A stored approval that is no longer shownHash is ErrApprovalChanged; one
// that does not match its own hash is ErrApprovalHash; one already decided,
// cancelled or expired is ErrNotPending; one past its ApprovalTTL is
// recorded as expired, its run cancelled, and ErrApprovalExpired returned.
//
// A decider who is an enrolled approver (the signer, or the approver named
// by) must have the approval in scope (ErrOutOfScope). On an approval with
// a Requirement the decision is a vote (approval.voted): it returns nil
// with the approval still pending until every stage is met, and a second
// vote, a vote outside the open stage or by someone the requirement gives
// no weight is a *VoteError, recording nothing.
func ApproveShown(ctx context.Context, store Store, obs Observer, runID, approvalID, shownHash, by, note string, opts ...DecideOption) error {
	return Operator{Store: store, Observer: obs}.ApproveShown(ctx, runID, approvalID, shownHash, by, note, opts...)
}

// RejectShown refuses a pending approval only if its stored hash is still
// shownHash, and cancels the run in the same transaction. It refuses as
// ApproveShown does.
func RejectShown(ctx context.Context, store Store, obs Observer, runID, approvalID, shownHash, by, note string, opts ...DecideOption) error {
	return Operator{Store: store, Observer: obs}.RejectShown(ctx, runID, approvalID, shownHash, by, note, opts...)
}

// Cancel cancels a run that has not ended.
func Cancel(ctx context.Context, store Store, obs Observer, runID, by, note string) (Run, error) {
	return Operator{Store: store, Observer: obs}.Cancel(ctx, runID, by, note)
}

// ApproveShown is the package function ApproveShown on o's clock.
func (o Operator) ApproveShown(ctx context.Context, runID, approvalID, shownHash, by, note string, opts ...DecideOption) error {
	return o.decide(ctx, runID, approvalID, shownHash, true, by, note, opts)
}

// RejectShown is the package function RejectShown on o's clock.
func (o Operator) RejectShown(ctx context.Context, runID, approvalID, shownHash, by, note string, opts ...DecideOption) error {
	return o.decide(ctx, runID, approvalID, shownHash, false, by, note, opts)
}

// VerifyApproval recomputes an approval's hash from its stored fields.
func VerifyApproval(a Approval) error {
	if a.DecodeError != "" {
		return fmt.Errorf("%w: approval %s will not decode: %s", ErrApprovalHash, a.ID, a.DecodeError)
	}
	h, err := ApprovalHashWith(a.Kind, a.Capability, a.Presentation, a.Request, a.Requirement, a.PolicyVersion)
	if err != nil {
		return fmt.Errorf("%w: approval %s: %v", ErrApprovalHash, a.ID, err)
	}
	if h != a.Hash {
		return fmt.Errorf("%w: approval %s", ErrApprovalHash, a.ID)
	}
	return nil
}

// checkDecidable applies the refusals every decision makes, in order.
// An approval that has left pending is ErrNotPending whatever its run now
// is: the approval's own state is the answer the caller can act on.
func checkDecidable(run Run, a Approval, shownHash string) error {
	if a.Status == ApprovalExpired {
		return fmt.Errorf("%w: approval %s", ErrApprovalExpired, a.ID)
	}
	if a.Status.Decided() {
		return fmt.Errorf("%w: approval %s is %s", ErrNotPending, a.ID, a.Status)
	}
	if run.Status != RunWaiting {
		return fmt.Errorf("%w: run %s is %s, not waiting for approval", ErrRunState, run.ID, run.Status)
	}
	if shownHash == "" || shownHash != a.Hash {
		return fmt.Errorf("%w: approval %s", ErrApprovalChanged, a.ID)
	}
	return VerifyApproval(a)
}

func (o Operator) decide(ctx context.Context, runID, approvalID, shownHash string, approve bool, by, note string, opts []DecideOption) error {
	var opt decideOptions
	for _, f := range opts {
		f(&opt)
	}
	now := o.now()
	status := ApprovalRejected
	if approve {
		status = ApprovalApproved
	}
	var expired bool
	err := o.write(ctx, func(tx Tx) error {
		run, err := tx.RunGet(runID)
		if err != nil {
			return err
		}
		a, err := tx.ApprovalGet(runID, approvalID)
		if err != nil {
			return fmt.Errorf("%w: approval %s of run %s", ErrNotFound, approvalID, runID)
		}
		if err := checkDecidable(run, a, shownHash); err != nil {
			return err
		}
		if !a.ExpiresAt.IsZero() && !now.Before(a.ExpiresAt) {
			expired = true
			return expireTx(tx, run, a, now)
		}
		d, err := decideAs(tx, run, a, approve, by, note, opt.sig, now)
		if err != nil || d.voted {
			// A vote that met not every stage leaves the approval pending.
			return err
		}
		decidedBy := d.name
		payload := ApprovalDecidedPayload{ApprovalID: a.ID, Status: status, By: d.name, Note: note}
		if opt.sig != nil {
			payload.ApproverID, payload.CredentialID, payload.Signature = d.ap.ID, d.ap.CredentialID, opt.sig
		}
		if err := tx.ApprovalDecide(ApprovalDecide{ID: a.ID, RunID: runID, From: ApprovalPending, Hash: shownHash,
			Status: status, DecidedAt: now, DecidedBy: decidedBy, Note: note, Signature: opt.sig}); err != nil {
			return fmt.Errorf("%w: approval %s changed while deciding", ErrApprovalChanged, a.ID)
		}
		if err := event(tx, runID, a.StepID, now, EventApprovalDecided, payload); err != nil {
			return err
		}
		if approve {
			return nil
		}
		obs := observation(ObsPolicyDenied, map[string]string{"approval_id": a.ID, "note": note}, "approval rejected: "+note)
		if err := tx.StepUpdate(StepUpdate{ID: a.StepID, From: []StepStatus{StepAwaitingApproval}, Status: StepFailed,
			Observation: obs, FinishedAt: now}); err != nil {
			return err
		}
		if err := event(tx, runID, a.StepID, now, EventStepFailed, keySorted{StepFailedPayload{
			Detail: obs.Summary, Observation: obs.Kind, ContentHash: obs.ContentHash}}); err != nil {
			return err
		}
		if err := tx.RunUpdate(RunUpdate{ID: runID, From: []RunStatus{RunWaiting}, Status: RunCancelled,
			Reason: ReasonApprovalRejected, ReasonDetail: note, FinishedAt: now, SetLease: true}); err != nil {
			return err
		}
		return event(tx, runID, "", now, EventRunFinished, RunFinishedPayload{
			Status: RunCancelled, Reason: ReasonApprovalRejected, Detail: note, Steps: run.StepCount, By: &decidedBy})
	})
	if err != nil {
		return err
	}
	if expired {
		return fmt.Errorf("%w: approval %s expired before it was decided", ErrApprovalExpired, approvalID)
	}
	return nil
}

// Cancel cancels a run that has not ended, and every approval of it still
// pending, in one transaction. It needs no lease: a live loop's next write
// fails and it returns the cancelled run.
func (o Operator) Cancel(ctx context.Context, runID, by, note string) (Run, error) {
	now := o.now()
	err := o.write(ctx, func(tx Tx) error {
		run, err := tx.RunGet(runID)
		if err != nil {
			return err
		}
		if run.Status.Terminal() {
			return fmt.Errorf("%w: run %s already ended (%s)", ErrRunState, runID, run.Status)
		}
		steps, err := tx.StepList(runID)
		if err != nil {
			return err
		}
		// Nothing is left pending: an approval still waiting is cancelled
		// with the run, so no one can decide it afterwards.
		apps, err := tx.ApprovalList(runID)
		if err != nil {
			return err
		}
		for _, a := range apps {
			if a.Status != ApprovalPending {
				continue
			}
			if err := tx.ApprovalDecide(ApprovalDecide{ID: a.ID, RunID: runID, From: ApprovalPending,
				Status: ApprovalCancelled, DecidedAt: now, DecidedBy: by, Note: note}); err != nil {
				return err
			}
			if err := event(tx, runID, a.StepID, now, EventApprovalDecided, ApprovalDecidedPayload{
				ApprovalID: a.ID, Status: ApprovalCancelled, By: by, Note: note}); err != nil {
				return err
			}
		}
		obs := observation(ObsInterrupted, map[string]string{"by": by, "note": note}, "cancelled by operator: "+note)
		for _, st := range steps {
			if st.Status.InFlight() || st.Status == StepAwaitingApproval {
				if err := tx.StepUpdate(StepUpdate{ID: st.ID, From: []StepStatus{st.Status}, Status: StepFailed,
					Observation: obs, FinishedAt: now}); err != nil {
					return err
				}
				if err := event(tx, runID, st.ID, now, EventStepFailed, keySorted{StepFailedPayload{
					Detail: obs.Summary, Observation: obs.Kind, ContentHash: obs.ContentHash}}); err != nil {
					return err
				}
			}
		}
		if err := tx.RunUpdate(RunUpdate{ID: runID, From: []RunStatus{run.Status}, Status: RunCancelled,
			Reason: ReasonOperatorCancelled, ReasonDetail: note, FinishedAt: now, SetLease: true}); err != nil {
			return err
		}
		return event(tx, runID, "", now, EventRunFinished, RunFinishedPayload{
			Status: RunCancelled, Reason: ReasonOperatorCancelled, Detail: note, Steps: run.StepCount, By: &by})
	})
	if err != nil {
		return Run{}, err
	}
	return o.Store.GetRun(ctx, runID)
}
