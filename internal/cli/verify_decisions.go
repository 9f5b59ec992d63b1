package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt"
)

// decisionsReport is what verify -decisions found.
type decisionsReport struct {
	// Decisions is how many approval.decided events were read, Signed
	// how many of them carried a signature, all of which verified before
	// Failure.
	Decisions int64 `json:"decisions"`
	Signed    int64 `json:"signed"`
	Verified  int64 `json:"verified"`
	// Unsigned is how many approvals were granted without a signature
	// (each a failure with pinned keys).
	Unsigned  int64 `json:"unsigned_approvals"`
	Approvers int   `json:"approvers"`
	// Votes is how many approval.voted events were read, each of which
	// held before Failure.
	Votes int64 `json:"votes"`
	// VotedApprovals is how many approvals those votes were cast on.
	VotedApprovals int `json:"voted_approvals"`
	// GrantedByVotes is how many approvals were approved with a
	// requirement that those votes met.
	GrantedByVotes int `json:"granted_by_votes"`
	// Erased is how many decisions belong to erased runs: their
	// signatures were removed with the content they signed.
	Erased int64 `json:"erased,omitempty"`
	// Failure is the first signed decision (or enrollment) that does not
	// hold, in chain order.
	Failure *decisionFailure `json:"failure,omitempty"`
}

type decisionFailure struct {
	Seq        int64  `json:"seq"`
	RunID      string `json:"run_id,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	Reason     string `json:"reason"`
}

// decisionsPage is how many events one read takes.
const decisionsPage = 1000

// verifyDecisions walks the chain's events in order up to head and
// re-verifies, offline, every signed decision from the stored public keys:
// the approver's key as the chain's approver.enrolled event recorded it
// must be the one in the approvers table, the approver must have been
// enrolled before the decision and not removed before it, the statement
// must say what the event recorded, the signature must verify, and the
// approval row must hold the same signature. With pinned keys, every
// signing key must also be pinned and every approval granted must be
// signed. Every approval row that says approved must have an
// approval.decided event that approved it: a row flipped by a database
// writer has none.
func verifyDecisions(st agentrt.StoreReader, head int64, pinned *agentrt.PinnedKeys) (*decisionsReport, error) {
	ctx := background()
	rep := &decisionsReport{}
	aps, err := st.ListApprovers(ctx)
	if err != nil {
		return nil, err
	}
	rep.Approvers = len(aps)
	byID := map[string]agentrt.EnrolledApprover{}
	for _, a := range aps {
		byID[a.ID] = a
	}
	type state struct{ enrolled, removed bool }
	seen := map[string]*state{}
	approvedInChain := map[[2]string]bool{}
	erased := map[string]bool{}
	votes := newVoteLedger(st, pinned, aps, erased)
	defer func() {
		rep.Votes, rep.VotedApprovals, rep.GrantedByVotes = votes.count, len(votes.votes), votes.grants
	}()
	fail := func(e agentrt.Event, approvalID, format string, args ...any) (*decisionsReport, error) {
		rep.Failure = &decisionFailure{Seq: e.Seq, RunID: e.RunID, ApprovalID: approvalID, Reason: fmt.Sprintf(format, args...)}
		return rep, nil
	}
	for after := int64(0); after < head; {
		evs, err := st.ListEventsAfter(ctx, "", after, decisionsPage)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			after = e.Seq
			if e.Seq > head {
				break
			}
			if id, why, err := votes.event(ctx, e); err != nil || why != "" {
				if err != nil {
					return nil, err
				}
				return fail(e, id, "%s", why)
			}
			switch e.Type {
			case agentrt.EventApproverEnrolled:
				p, err := agentrt.PayloadAs[agentrt.ApproverEnrolledPayload](e)
				if err != nil {
					return fail(e, "", "the approver.enrolled event will not decode")
				}
				a, ok := byID[p.ApproverID]
				k, kerr := base64.StdEncoding.DecodeString(p.PublicKey)
				if !ok || kerr != nil || !bytes.Equal(k, a.PublicKey) || p.CredentialID != a.CredentialID {
					return fail(e, "", "approver %s's stored key is not the one its approver.enrolled event recorded", p.ApproverID)
				}
				seen[p.ApproverID] = &state{enrolled: true}
			case agentrt.EventApproverRemoved:
				if p, err := agentrt.PayloadAs[agentrt.ApproverRemovedPayload](e); err == nil && seen[p.ApproverID] != nil {
					seen[p.ApproverID].removed = true
				}
			case agentrt.EventApprovalDecided:
				rep.Decisions++
				p, err := agentrt.PayloadAs[agentrt.ApprovalDecidedPayload](e)
				if err != nil {
					return fail(e, "", "the approval.decided event will not decode")
				}
				row, err := st.GetApproval(ctx, e.RunID, p.ApprovalID)
				if err != nil {
					return fail(e, p.ApprovalID, "its approval row is missing: %v", err)
				}
				approved := p.Status == agentrt.ApprovalApproved
				if approved {
					approvedInChain[[2]string{e.RunID, p.ApprovalID}] = true
					if why, err := votes.granted(ctx, row); err != nil || why != "" {
						if err != nil {
							return nil, err
						}
						return fail(e, p.ApprovalID, "%s", why)
					}
				}
				if row.Hash == "" {
					// Erasure blanks an approval's hash and removes its
					// signature, which signed content; the chain's own
					// check proves the erasure was recorded.
					er, err := runErased(ctx, st, erased, e.RunID)
					if err != nil {
						return nil, err
					}
					if er {
						rep.Erased++
						continue
					}
				}
				if p.Signature == nil {
					if row.Signature != nil && row.Status != agentrt.ApprovalExpired {
						return fail(e, p.ApprovalID, "the approval row holds a signature its approval.decided event does not")
					}
					if approved {
						rep.Unsigned++
						if pinned != nil {
							return fail(e, p.ApprovalID, "approved without a signature, but keys are pinned: an unsigned grant is what a database writer can make")
						}
					}
					continue
				}
				rep.Signed++
				sig := *p.Signature
				a, ok := byID[sig.ApproverID]
				s := seen[sig.ApproverID]
				switch {
				case !ok || s == nil || !s.enrolled:
					return fail(e, p.ApprovalID, "signed by approver %s, which was not enrolled before it", sig.ApproverID)
				case s.removed:
					return fail(e, p.ApprovalID, "signed by approver %q after its removal", a.Name)
				case p.By != a.Name:
					return fail(e, p.ApprovalID, "the event names %q as deciding, but %q signed it", p.By, a.Name)
				}
				verb := agentrt.StatementReject
				if p.Status == agentrt.ApprovalApproved {
					verb = agentrt.StatementApprove
				}
				stmt := sig.Statement
				if stmt.RunID != e.RunID || stmt.ApprovalID != p.ApprovalID || stmt.Decision != verb || stmt.Note != p.Note || stmt.ApprovalHash != row.Hash {
					return fail(e, p.ApprovalID, "the signed statement is not the decision the chain recorded")
				}
				if err := agentrt.VerifyDecision(a, sig); err != nil {
					return fail(e, p.ApprovalID, "%v", err)
				}
				if row.Signature == nil {
					return fail(e, p.ApprovalID, "the approval row lost its signature")
				}
				rs, _ := json.Marshal(row.Signature)
				es, _ := json.Marshal(sig)
				if !bytes.Equal(rs, es) || row.ApproverID != sig.ApproverID || row.CredentialID != sig.CredentialID {
					return fail(e, p.ApprovalID, "the approval row's signature is not the one the chain recorded")
				}
				if pinned != nil && !pinned.Holds(a) {
					return fail(e, p.ApprovalID, "approver %q's key is not pinned", a.Name)
				}
				rep.Verified++
			}
		}
	}
	return rep, checkApprovedRows(st, approvedInChain, rep)
}

// checkApprovedRows fails the report on the first approval row, run by
// run, that says approved (or was approved and then expired unexecuted)
// with no approval.decided event approving it.
func checkApprovedRows(st agentrt.StoreReader, approvedInChain map[[2]string]bool, rep *decisionsReport) error {
	ctx := background()
	for offset := 0; ; offset += decisionsPage {
		runs, _, err := st.ListRunsPage(ctx, decisionsPage, offset)
		if err != nil {
			return err
		}
		for _, r := range runs {
			aps, _, err := st.ListApprovalsPage(ctx, r.ID, agentrt.ApprovalApproved, 1<<20, 0)
			if err != nil {
				return err
			}
			for _, a := range aps {
				if !approvedInChain[[2]string{r.ID, a.ID}] {
					rep.Failure = &decisionFailure{RunID: r.ID, ApprovalID: a.ID,
						Reason: "its row says approved, but the event chain holds no approval.decided event approving it"}
					return nil
				}
			}
		}
		if len(runs) < decisionsPage {
			return nil
		}
	}
}

// runErased reports whether the run's last event is its run.erased.
func runErased(ctx context.Context, st agentrt.StoreReader, memo map[string]bool, runID string) (bool, error) {
	if v, ok := memo[runID]; ok {
		return v, nil
	}
	evs, err := st.ListEvents(ctx, runID)
	if err != nil {
		return false, err
	}
	v := len(evs) > 0 && evs[len(evs)-1].Type == agentrt.EventRunErased
	memo[runID] = v
	return v, nil
}
