package agentrt

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// checkSignedGrant refuses, before anything executes, a grant that must be
// signed and is not validly signed: the run's Limits, the policy decision
// that paused the step, or the policy asked again now may require it. The
// signature must be over this approval's hash and say approve, by an
// approver enrolled and not removed now, and verify with its stored key
// (and, with Config.PinnedKeys, with a pinned one). Before that, every
// grant's deciders are checked from the chain (checkDeciders): the votes
// of an approval with a requirement must meet it, each vote's signature
// holding where signatures are required. Nothing is written: the run
// stays waiting, for an operator to cancel.
func (s *session) checkSignedGrant(ctx context.Context, grant *Approval, now PolicyDecision) error {
	if grant == nil {
		return nil
	}
	required := ""
	switch {
	case s.e.requireSigned:
		required = "engine configuration"
	case s.run.Limits.RequireSignedGrant, s.recordedLimits != nil && s.recordedLimits.RequireSignedGrant:
		required = "run"
	case now.RequireSignature:
		required = "policy"
	default:
		if st := s.step(s.cur.idx); st.Policy != nil && st.Policy.RequireSignature {
			required = "policy"
		}
	}
	if required == "" && s.e.pinned != nil {
		// With pinned keys every grant must be signed by one: an unsigned
		// grant is what a database writer can make, so it grants nothing.
		required = "pinned keys"
	}
	if err := s.checkDeciders(ctx, grant, required != ""); err != nil {
		return err
	}
	if required == "" {
		return nil
	}
	refuse := func(reason string, err error) error {
		return &UnsignedGrantError{RunID: s.runID, ApprovalID: grant.ID, Required: required, Reason: reason, Err: err}
	}
	sig := grant.Signature
	if sig == nil {
		return refuse("the grant is not signed", nil)
	}
	if err := checkStatement(*sig, s.runID, grant.ID, grant.Hash, StatementApprove, grant.Note); err != nil {
		return refuse("the signed statement is not this grant's", err)
	}
	if sig.ApproverID != grant.ApproverID || sig.CredentialID != grant.CredentialID {
		return refuse("the approval row names another signer than its signature", nil)
	}
	ap, err := s.e.store.GetApprover(ctx, sig.ApproverID)
	if errors.Is(err, ErrNotFound) {
		return refuse("its approver is not enrolled", nil)
	}
	if err != nil {
		return err
	}
	if ap.Removed() {
		return refuse(fmt.Sprintf("approver %q was removed at %s", ap.Name, ap.RemovedAt.Format(time.RFC3339)), nil)
	}
	if ap.Name != grant.DecidedBy {
		return refuse(fmt.Sprintf("the grant names %q as deciding, but %q signed it", grant.DecidedBy, ap.Name), nil)
	}
	if err := VerifyDecision(ap, *sig); err != nil {
		return refuse("the signature does not verify", err)
	}
	if s.e.pinned != nil && !s.e.pinned.Holds(ap) {
		return refuse(fmt.Sprintf("approver %q's key is not among the pinned keys", ap.Name), nil)
	}
	return nil
}
