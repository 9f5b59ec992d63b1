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
	aps, err := st.ListApprovers(ctx)
	if err != nil {
		return nil, err
	}
	w := &decisionWalk{st: st, pinned: pinned, rep: &decisionsReport{Approvers: len(aps)},
		byID: map[string]agentrt.EnrolledApprover{}, seen: map[string]*approverSeen{},
		approvedInChain: map[[2]string]bool{}, erased: map[string]bool{}}
	for _, a := range aps {
		w.byID[a.ID] = a
	}
	w.votes = newVoteLedger(st, pinned, aps, w.erased)
	defer func() {
		w.rep.Votes, w.rep.VotedApprovals, w.rep.GrantedByVotes = w.votes.count, len(w.votes.votes), w.votes.grants
	}()
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
			approvalID, why, err := w.event(ctx, e)
			if err != nil {
				return nil, err
			}
			if why != "" {
				w.rep.Failure = &decisionFailure{Seq: e.Seq, RunID: e.RunID, ApprovalID: approvalID, Reason: why}
				return w.rep, nil
			}
		}
	}
	return w.rep, checkApprovedRows(st, w.approvedInChain, w.rep)
}

// approverSeen is what the chain has said of an approver so far.
type approverSeen struct{ enrolled, removed bool }

// decisionWalk is verifyDecisions' state along the chain.
type decisionWalk struct {
	st     agentrt.StoreReader
	pinned *agentrt.PinnedKeys
	rep    *decisionsReport
	// byID are the stored approvers, seen what the chain said of them.
	byID map[string]agentrt.EnrolledApprover
	seen map[string]*approverSeen
	// approvedInChain are the approvals (run, approval) an event approved.
	approvedInChain map[[2]string]bool
	erased          map[string]bool
	votes           *voteLedger
}

// event checks one event; a why other than "" is the first failure, about
// the approval approvalID names.
func (w *decisionWalk) event(ctx context.Context, e agentrt.Event) (approvalID, why string, err error) {
	if id, why, err := w.votes.event(ctx, e); err != nil || why != "" {
		return id, why, err
	}
	switch e.Type {
	case agentrt.EventApproverEnrolled:
		p, err := agentrt.PayloadAs[agentrt.ApproverEnrolledPayload](e)
		if err != nil {
			return "", "the approver.enrolled event will not decode", nil
		}
		a, ok := w.byID[p.ApproverID]
		k, kerr := base64.StdEncoding.DecodeString(p.PublicKey)
		if !ok || kerr != nil || !bytes.Equal(k, a.PublicKey) || p.CredentialID != a.CredentialID {
			return "", fmt.Sprintf("approver %s's stored key is not the one its approver.enrolled event recorded", p.ApproverID), nil
		}
		w.seen[p.ApproverID] = &approverSeen{enrolled: true}
	case agentrt.EventApproverRemoved:
		if p, err := agentrt.PayloadAs[agentrt.ApproverRemovedPayload](e); err == nil && w.seen[p.ApproverID] != nil {
			w.seen[p.ApproverID].removed = true
		}
	case agentrt.EventApprovalDecided:
		return w.decided(ctx, e)
	}
	return "", "", nil
}

// decided checks an approval.decided event against its approval row and,
// when it is signed, its signature.
func (w *decisionWalk) decided(ctx context.Context, e agentrt.Event) (approvalID, why string, err error) {
	w.rep.Decisions++
	p, err := agentrt.PayloadAs[agentrt.ApprovalDecidedPayload](e)
	if err != nil {
		return "", "the approval.decided event will not decode", nil
	}
	row, err := w.st.GetApproval(ctx, e.RunID, p.ApprovalID)
	if err != nil {
		return p.ApprovalID, fmt.Sprintf("its approval row is missing: %v", err), nil
	}
	approved := p.Status == agentrt.ApprovalApproved
	if approved {
		w.approvedInChain[[2]string{e.RunID, p.ApprovalID}] = true
		if why, err := w.votes.granted(ctx, row); err != nil || why != "" {
			return p.ApprovalID, why, err
		}
	}
	if row.Hash == "" {
		// Erasure blanks an approval's hash and removes its signature,
		// which signed content; the chain's own check proves the
		// erasure was recorded.
		er, err := runErased(ctx, w.st, w.erased, e.RunID)
		if err != nil {
			return "", "", err
		}
		if er {
			w.rep.Erased++
			return "", "", nil
		}
	}
	if p.Signature == nil {
		if row.Signature != nil && row.Status != agentrt.ApprovalExpired {
			return p.ApprovalID, "the approval row holds a signature its approval.decided event does not", nil
		}
		if approved {
			w.rep.Unsigned++
			if w.pinned != nil {
				return p.ApprovalID, "approved without a signature, but keys are pinned: an unsigned grant is what a database writer can make", nil
			}
		}
		return "", "", nil
	}
	w.rep.Signed++
	if why := w.signed(e, p, row); why != "" {
		return p.ApprovalID, why, nil
	}
	w.rep.Verified++
	return "", "", nil
}

// signed checks a signed decision: its approver enrolled and not removed
// before it, its statement the decision the chain recorded, its signature
// valid and held by the row too, and its key pinned when keys are.
func (w *decisionWalk) signed(e agentrt.Event, p agentrt.ApprovalDecidedPayload, row agentrt.Approval) string {
	sig := *p.Signature
	a, ok := w.byID[sig.ApproverID]
	s := w.seen[sig.ApproverID]
	switch {
	case !ok || s == nil || !s.enrolled:
		return fmt.Sprintf("signed by approver %s, which was not enrolled before it", sig.ApproverID)
	case s.removed:
		return fmt.Sprintf("signed by approver %q after its removal", a.Name)
	case p.By != a.Name:
		return fmt.Sprintf("the event names %q as deciding, but %q signed it", p.By, a.Name)
	}
	verb := agentrt.StatementReject
	if p.Status == agentrt.ApprovalApproved {
		verb = agentrt.StatementApprove
	}
	stmt := sig.Statement
	if stmt.RunID != e.RunID || stmt.ApprovalID != p.ApprovalID || stmt.Decision != verb || stmt.Note != p.Note || stmt.ApprovalHash != row.Hash {
		return "the signed statement is not the decision the chain recorded"
	}
	if err := agentrt.VerifyDecision(a, sig); err != nil {
		return err.Error()
	}
	if row.Signature == nil {
		return "the approval row lost its signature"
	}
	rs, _ := json.Marshal(row.Signature)
	es, _ := json.Marshal(sig)
	if !bytes.Equal(rs, es) || row.ApproverID != sig.ApproverID || row.CredentialID != sig.CredentialID {
		return "the approval row's signature is not the one the chain recorded"
	}
	if w.pinned != nil && !w.pinned.Holds(a) {
		return fmt.Sprintf("approver %q's key is not pinned", a.Name)
	}
	return ""
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
