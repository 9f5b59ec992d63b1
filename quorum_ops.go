package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SetApproverAccess replaces the roles and scope of the unremoved approver
// with the name, recorded as approver.access_set naming by. Roles say
// which stages of a Requirement the approver may vote in; the scope says
// which approvals it may decide at all.
func (o Operator) SetApproverAccess(ctx context.Context, name string, access ApproverAccess, by string) (EnrolledApprover, error) {
	if by == "" {
		return EnrolledApprover{}, &ConfigError{Field: "by", Reason: "must name who sets the approver's roles and scope"}
	}
	if err := access.check(); err != nil {
		return EnrolledApprover{}, err
	}
	return o.changeApprover(ctx, name, func(tx Tx, a *EnrolledApprover, now time.Time) error {
		a.Roles, a.Scope = access.Roles, access.Scope
		return setAccessTx(tx, *a, by, now)
	})
}

// setAccessTx writes a's roles and scope and their approver.access_set.
func setAccessTx(tx Tx, a EnrolledApprover, by string, now time.Time) error {
	access := ApproverAccess{Roles: a.Roles, Scope: a.Scope}
	if err := tx.ApproverSetAccess(ApproverSetAccess{ID: a.ID, Access: access}); err != nil {
		return err
	}
	roles := a.Roles
	if roles == nil {
		roles = []string{}
	}
	return event(tx, "", "", now, EventApproverAccessSet, ApproverAccessSetPayload{ApproverID: a.ID, By: by, Name: a.Name,
		Roles: roles, Scope: a.Scope})
}

// decider is who a decision is by, and whether it granted or only voted.
type decider struct {
	name string
	ap   EnrolledApprover
	// voted: the decision was a vote that met not every stage; the
	// approval stays pending.
	voted bool
}

// decideAs identifies who decides approval a, inside the deciding
// transaction, and refuses a decider outside its scope. For an approval
// with a requirement it records the vote, and says whether the approval
// is now decided. sig is the decision's signature, if any.
func decideAs(tx Tx, run Run, a Approval, approve bool, by, note string, sig *DecisionSignature, now time.Time) (decider, error) {
	var ap EnrolledApprover
	enrolled := false
	if sig != nil {
		var err error
		if ap, err = signedBy(tx, sig, run.ID, a.ID, a.Hash, approve, by, note, now); err != nil {
			return decider{}, err
		}
		enrolled = true
	} else {
		// A run's requirement is known here and refused early; a policy's
		// is the policy's to state again when Resume asks it, and Resume
		// refuses the grant then.
		if approve && run.Limits.RequireSignedGrant {
			return decider{}, &UnsignedGrantError{RunID: run.ID, ApprovalID: a.ID, Required: "run", Reason: "the decision is not signed"}
		}
		x, err := tx.ApproverByName(by)
		switch {
		case err == nil:
			ap, enrolled = x, true
		case !errors.Is(err, ErrNotFound):
			return decider{}, err
		}
	}
	if a.Requirement != nil {
		if !enrolled {
			return decider{}, &VoteError{ApprovalID: a.ID, Approver: by, Err: ErrOutOfScope,
				Reason: "an approval with a requirement is decided by enrolled approvers' votes, and no approver is enrolled under that name"}
		}
		granted, err := voteTx(tx, run, a, ap, approve, note, sig, now)
		return decider{name: ap.Name, ap: ap, voted: approve && !granted}, err
	}
	if !enrolled {
		return decider{name: by}, nil
	}
	q := quorumCount{approval: a, labels: run.Limits.Labels}
	if ok, why := q.inScope(ap); !ok {
		return decider{}, &VoteError{ApprovalID: a.ID, Approver: ap.Name, Err: ErrOutOfScope, Reason: why}
	}
	name := by
	if sig != nil {
		name = ap.Name
	}
	return decider{name: name, ap: ap}, nil
}

// voteTx records ap's vote on a, after refusing one out of scope, a second
// one, one for a stage that is not open, or one the requirement gives no
// weight; it reports whether every stage is now met (or, for a reject,
// that the reject ends the approval).
func voteTx(tx Tx, run Run, a Approval, ap EnrolledApprover, approve bool, note string, sig *DecisionSignature, now time.Time) (bool, error) {
	refuse := func(sentinel error, format string, args ...any) error {
		return &VoteError{ApprovalID: a.ID, Approver: ap.Name, Err: sentinel, Reason: fmt.Sprintf(format, args...)}
	}
	approvers, err := tx.ApproverList()
	if err != nil {
		return false, err
	}
	q := quorumCount{approval: a, labels: run.Limits.Labels, approvers: approvers}
	if ok, why := q.inScope(ap); !ok {
		return false, refuse(ErrOutOfScope, "%s", why)
	}
	votes, err := tx.VoteList(a.ID)
	if err != nil {
		return false, err
	}
	for _, v := range votes {
		if v.ApproverID == ap.ID {
			return false, refuse(ErrAlreadyVoted, "it voted %s at %s, and a vote counts once", v.Decision, v.At.UTC().Format(time.RFC3339))
		}
	}
	stages, _ := q.progress(votes)
	stage := openStage(stages)
	if err := q.mayVote(ap, approve, stages, stage); err != nil {
		return false, err
	}
	verb := StatementReject
	if approve {
		verb = StatementApprove
	}
	v := Vote{ApprovalID: a.ID, RunID: run.ID, ApproverID: ap.ID, ApproverName: ap.Name, Stage: stage, Decision: verb,
		Note: note, At: now, Signature: sig}
	if err := tx.VoteInsert(v); err != nil {
		return false, err
	}
	p := ApprovalVotedPayload{ApprovalID: a.ID, ApproverID: ap.ID, By: ap.Name, Decision: verb, Note: note, Signature: sig, Stage: stage}
	if sig != nil {
		p.CredentialID = sig.CredentialID
	}
	if err := event(tx, run.ID, a.StepID, now, EventApprovalVoted, p); err != nil {
		return false, err
	}
	if !approve {
		return true, nil
	}
	stages, _ = q.progress(append(votes, v))
	return met(stages), nil
}

// mayVote refuses ap's vote in the open stage (1-based; 0 when none is)
// in one sentence: a reject is anyone's who may vote in some stage, an
// approval only theirs who may vote in the open one.
func (q quorumCount) mayVote(ap EnrolledApprover, approve bool, stages []StageProgress, open int) error {
	refuse := func(sentinel error, format string, args ...any) error {
		return &VoteError{ApprovalID: q.approval.ID, Approver: ap.Name, Err: sentinel, Reason: fmt.Sprintf(format, args...)}
	}
	req := q.approval.Requirement
	if approve && open > 0 && q.eligible(ap, req.Stages[open-1]) {
		return nil
	}
	for i, s := range req.Stages {
		if !q.eligible(ap, s) {
			continue
		}
		switch {
		case !approve:
			return nil
		case stages[i].Met:
			return refuse(ErrStageClosed, "stage %d, where it may vote, is met already", i+1)
		default:
			return refuse(ErrStageClosed, "stage %d, where it may vote, opens once stage %d is met", i+1, open)
		}
	}
	if who := Requester(q.labels); who != "" && who == ap.Name {
		return refuse(ErrOutOfScope, "it is the run's requester, and the requirement gives the requester's vote no weight")
	}
	var wants []string
	for _, s := range req.Stages {
		wants = append(wants, s.Roles...)
		wants = append(wants, s.Approvers...)
	}
	slices.Sort(wants)
	have := "no role"
	if len(ap.Roles) > 0 {
		have = "roles " + strings.Join(ap.Roles, ", ")
	}
	return refuse(ErrOutOfScope, "it holds %s, and the requirement asks for %s", have, strings.Join(slices.Compact(wants), ", "))
}
