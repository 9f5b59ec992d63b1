package agentrt

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is where an approval is.
type ApprovalStatus string

const (
	// ApprovalPending: waiting for an operator. Entered by a pause; left by
	// ApproveShown (approved), RejectShown (rejected), the first decision or
	// Resume past ApprovalTTL (expired), or Cancel of its run (cancelled).
	ApprovalPending ApprovalStatus = "pending"
	// ApprovalApproved: granted; a Resume may execute the request once.
	// Entered by ApproveShown (for an approval with a Requirement, the
	// vote that meets its last stage); left only past GrantTTL (expired,
	// ExpiryExecution) before Resume or Execute runs it.
	ApprovalApproved ApprovalStatus = "approved"
	// ApprovalRejected: terminal; refused by RejectShown, which cancelled the
	// run in the same transaction.
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalExpired: terminal; past ApprovalTTL while pending, or past
	// GrantTTL once granted, which cancelled the run.
	ApprovalExpired ApprovalStatus = "expired"
	// ApprovalCancelled: terminal; still pending when an operator's Cancel
	// ended its run, in the cancel's transaction, so nothing is left to
	// decide. DecidedBy and Note are the cancel's.
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// Decided reports whether the approval has left pending: nothing can
// decide it any more.
func (s ApprovalStatus) Decided() bool { return s != ApprovalPending }

// InterruptedSideEffect is the approval kind the runtime itself asks for when a
// call to a tool that is not read-only was cut off by a crash.
const InterruptedSideEffect = "interrupted_side_effect"

// Approval is a pause bound by Hash to its kind, capability, presentation and
// the exact recorded request.
type Approval struct {
	ID           string          `json:"id"`
	RunID        string          `json:"run_id"`
	StepID       string          `json:"step_id"`
	Kind         string          `json:"kind"`
	Capability   json.RawMessage `json:"capability"`
	Presentation json.RawMessage `json:"presentation"`
	Request      ToolRequest     `json:"request"`
	Hash         string          `json:"hash"`
	Status       ApprovalStatus  `json:"status"`
	CreatedAt    time.Time       `json:"created_at"`
	ExpiresAt    time.Time       `json:"expires_at,omitzero"`
	DecidedAt    time.Time       `json:"decided_at,omitzero"`
	DecidedBy    string          `json:"decided_by,omitempty"`
	Note         string          `json:"note,omitempty"`
	// ApproverID and CredentialID name the enrolled approver and key that
	// signed the decision, and Signature is what they signed; all empty
	// for an unsigned decision. DecidedBy is then the approver's enrolled
	// name.
	ApproverID   string             `json:"approver_id,omitempty"`
	CredentialID string             `json:"credential_id,omitempty"`
	Signature    *DecisionSignature `json:"signature,omitempty"`
	// Requirement is the policy's stages of votes, nil for an approval one
	// decision grants; PolicyVersion is the policy's id when it asked.
	// Both are part of Hash when Requirement is set.
	Requirement   *Requirement `json:"requirement,omitempty"`
	PolicyVersion string       `json:"policy_version,omitempty"`
	DecodeError   string       `json:"decode_error,omitempty"`
}
