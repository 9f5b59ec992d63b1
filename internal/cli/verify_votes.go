package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt"
)

// voteLedger is what verify -decisions keeps of the chain's votes, in
// chain order: each approver's roles and scope as approver.access_set
// last recorded them, who was removed, and each approval's votes so far.
// Every vote must hold when it is read (its approver enrolled and not
// removed, its signature its approver's, pinned with -pinned); every
// approval approved with a requirement must have votes that meet it, with
// the approvers as the chain had them then.
type voteLedger struct {
	st      agentrt.StoreReader
	pinned  *agentrt.PinnedKeys
	byID    map[string]agentrt.EnrolledApprover
	order   []agentrt.EnrolledApprover
	access  map[string]agentrt.ApproverAccess
	removed map[string]bool
	votes   map[string][]agentrt.Vote
	erased  map[string]bool
	count   int64
	grants  int // approvals approved with a requirement their votes met
}

func newVoteLedger(st agentrt.StoreReader, pinned *agentrt.PinnedKeys, aps []agentrt.EnrolledApprover, erased map[string]bool) *voteLedger {
	l := &voteLedger{st: st, pinned: pinned, byID: map[string]agentrt.EnrolledApprover{}, access: map[string]agentrt.ApproverAccess{},
		removed: map[string]bool{}, votes: map[string][]agentrt.Vote{}, erased: erased, order: aps}
	for _, a := range aps {
		l.byID[a.ID] = a
	}
	return l
}

// asOfChain is every approver with the roles, scope and removal the chain
// recorded so far, not what the rows say now.
func (l *voteLedger) asOfChain() []agentrt.EnrolledApprover {
	out := make([]agentrt.EnrolledApprover, 0, len(l.order))
	for _, a := range l.order {
		ac := l.access[a.ID]
		a.Roles, a.Scope = ac.Roles, ac.Scope
		switch {
		case !l.removed[a.ID]:
			a.RemovedAt = time.Time{}
		case a.RemovedAt.IsZero():
			a.RemovedAt = time.Unix(0, 1)
		}
		out = append(out, a)
	}
	return out
}

// event reads one event of the chain; for a vote that does not hold it
// returns the approval and why.
func (l *voteLedger) event(ctx context.Context, e agentrt.Event) (string, string, error) {
	switch e.Type {
	case agentrt.EventApproverAccessSet:
		if p, err := agentrt.PayloadAs[agentrt.ApproverAccessSetPayload](e); err == nil {
			l.access[p.ApproverID] = agentrt.ApproverAccess{Roles: p.Roles, Scope: p.Scope}
		}
	case agentrt.EventApproverRemoved:
		if p, err := agentrt.PayloadAs[agentrt.ApproverRemovedPayload](e); err == nil {
			l.removed[p.ApproverID] = true
		}
	case agentrt.EventApprovalVoted:
		v, ok := agentrt.VoteOf(e)
		if !ok {
			return "", "the approval.voted event will not decode", nil
		}
		a, ok := l.byID[v.ApproverID]
		switch {
		case !ok:
			return v.ApprovalID, fmt.Sprintf("a vote by approver %s, which is not enrolled", v.ApproverID), nil
		case l.removed[v.ApproverID]:
			return v.ApprovalID, fmt.Sprintf("a vote by approver %q after its removal", a.Name), nil
		case v.ApproverName != a.Name:
			return v.ApprovalID, fmt.Sprintf("the vote names %q, but it is approver %q's", v.ApproverName, a.Name), nil
		}
		row, err := l.st.GetApproval(ctx, e.RunID, v.ApprovalID)
		if err != nil {
			return v.ApprovalID, fmt.Sprintf("a vote on an approval with no row: %v", err), nil
		}
		if row.Hash == "" {
			if er, err := runErased(ctx, l.st, l.erased, e.RunID); err != nil || er {
				return "", "", err
			}
		}
		if err := agentrt.VoteSignatureHolds(a, row, v, false, l.pinned); err != nil {
			return v.ApprovalID, fmt.Sprintf("approver %q's vote does not hold: %v", a.Name, err), nil
		}
		l.votes[v.ApprovalID] = append(l.votes[v.ApprovalID], v)
		l.count++
	}
	return "", "", nil
}

// granted says why approval row, approved by an approval.decided event,
// was not granted by the chain's votes, or "".
func (l *voteLedger) granted(ctx context.Context, row agentrt.Approval) (string, error) {
	if row.Requirement == nil || row.Hash == "" {
		return "", nil
	}
	run, err := l.st.GetRun(ctx, row.RunID)
	if err != nil {
		return "", err
	}
	stages := agentrt.StageProgressOf(row, run.Limits.Labels, l.asOfChain(), l.votes[row.ID])
	for _, s := range stages {
		if !s.Met {
			return "approved, but the votes the chain records do not meet its requirement: " + agentrt.Remaining(stages), nil
		}
	}
	l.grants++
	return "", nil
}
