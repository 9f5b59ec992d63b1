package agentrt

import (
	"context"
	"fmt"
)

// checkDeciders refuses, before anything executes, a grant whose deciders
// as the chain records them do not grant it with the approvers as they
// are now: for an approval with a requirement, the approval.voted events
// of its step, each counted only if its approver is enrolled, unremoved,
// in scope and in the stage it names (and, where signatures are required,
// its signature holds, by a pinned key with pinned keys); for any other,
// its decider, if an enrolled approver, in scope. The store's vote rows
// count for nothing here. Nothing is written.
func (s *session) checkDeciders(ctx context.Context, grant *Approval, signed bool) error {
	approvers, err := s.e.store.ListApprovers(ctx)
	if err != nil {
		return err
	}
	q := quorumCount{approval: *grant, labels: s.run.Limits.Labels, approvers: approvers}
	refuse := func(format string, args ...any) error {
		return &QuorumError{RunID: s.runID, ApprovalID: grant.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if grant.Requirement == nil {
		for _, ap := range approvers {
			if ap.Removed() || (ap.ID != grant.ApproverID && ap.Name != grant.DecidedBy) {
				continue
			}
			if ok, why := q.inScope(ap); !ok {
				return refuse("its decider %q may not decide it: %s", ap.Name, why)
			}
		}
		return nil
	}
	votes, err := s.chainVotes(ctx, grant)
	if err != nil {
		return err
	}
	var valid []Vote
	for _, v := range votes {
		if s.voteHolds(q, *grant, v, signed) == nil {
			valid = append(valid, v)
		}
	}
	stages, _ := q.progress(valid)
	if !met(stages) {
		return refuse("the votes the chain records do not meet its requirement: %s", Remaining(stages))
	}
	return nil
}

// voteHolds says why a recorded vote does not count, or nil: its
// signature, when it has one or one is required, must be its approver's
// over this approval's hash and the vote's decision and note, and with
// pinned keys by a pinned key.
func (s *session) voteHolds(q quorumCount, g Approval, v Vote, signed bool) error {
	ap, ok := q.lookup(v.ApproverID)
	if !ok {
		return fmt.Errorf("%w: approver %s is not enrolled", ErrNotFound, v.ApproverID)
	}
	return VoteSignatureHolds(ap, g, v, signed, s.e.pinned)
}

// VoteSignatureHolds checks one recorded vote's signature against its
// approver's enrolled key: the statement must be over the approval's run,
// id and hash, the vote's decision and note, by ap's credential. An
// unsigned vote holds only when signed is false and pins is nil.
func VoteSignatureHolds(ap EnrolledApprover, g Approval, v Vote, signed bool, pins *PinnedKeys) error {
	if v.Signature == nil {
		if signed || pins != nil {
			return &SignatureError{ApprovalID: g.ID, ApproverID: v.ApproverID, Reason: "the vote is not signed"}
		}
		return nil
	}
	sig := *v.Signature
	if err := checkStatement(sig, g.RunID, g.ID, g.Hash, v.Decision, v.Note); err != nil {
		return err
	}
	if sig.ApproverID != v.ApproverID {
		return &SignatureError{ApprovalID: g.ID, ApproverID: v.ApproverID, Reason: "the vote names another approver than its signature"}
	}
	if err := VerifyDecision(ap, sig); err != nil {
		return err
	}
	if pins != nil && !pins.Holds(ap) {
		return &SignatureError{ApprovalID: g.ID, ApproverID: v.ApproverID, Reason: fmt.Sprintf("approver %q's key is not among the pinned keys", ap.Name)}
	}
	return nil
}

// chainVotes reads the approval.voted events of g's step for g, in chain
// order, as votes.
func (s *session) chainVotes(ctx context.Context, g *Approval) ([]Vote, error) {
	var out []Vote
	for after := int64(0); ; {
		evs, err := s.e.store.ListStepEvents(ctx, s.runID, g.StepID, after, stepEventsPage)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return out, nil
		}
		after = evs[len(evs)-1].Seq
		for _, ev := range evs {
			if v, ok := VoteOf(ev); ok && v.ApprovalID == g.ID {
				out = append(out, v)
			}
		}
	}
}

// VoteOf decodes an approval.voted event as a vote; ok is false for any
// other event or one whose payload does not decode.
func VoteOf(ev Event) (Vote, bool) {
	if ev.Type != EventApprovalVoted {
		return Vote{}, false
	}
	p, err := PayloadAs[ApprovalVotedPayload](ev)
	if err != nil {
		return Vote{}, false
	}
	return Vote{ApprovalID: p.ApprovalID, RunID: ev.RunID, ApproverID: p.ApproverID, ApproverName: p.By, Stage: p.Stage,
		Decision: p.Decision, Note: p.Note, At: ev.At, Signature: p.Signature}, true
}
