package agentrt

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is where an approval is.
type ApprovalStatus string

const (
	// ApprovalPending: waiting for an operator. Left by Approve, Reject or expiry.
	ApprovalPending ApprovalStatus = "pending"
	// ApprovalApproved: granted; a Resume may execute the request once.
	ApprovalApproved ApprovalStatus = "approved"
	// ApprovalRejected: refused; the run was cancelled.
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalExpired: past ApprovalTTL while pending, or past GrantTTL once granted.
	ApprovalExpired ApprovalStatus = "expired"
)

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
	DecodeError  string          `json:"decode_error,omitempty"`
}
