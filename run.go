package agentrt

import (
	"encoding/json"
	"fmt"
	"time"
)

// RunStatus is where a run is in its lifecycle.
type RunStatus string

const (
	// RunEnqueued: created by Driver.Enqueue and waiting for a Worker to
	// claim it; no step has run and no lease is held (a claim's lease may
	// be, until the claimer starts it). Left by a claim that starts it
	// (RUNNING) or by Cancel.
	RunEnqueued RunStatus = "ENQUEUED"
	// RunRunning: a driver or gate session holds the run's lease and is executing
	// it. Entered by Start, Begin, Resume, a worker's claim and takeover; left by
	// a pause or an end. A run whose holder let go or crashed stays RUNNING with
	// its lease free or lapsed until a Resume or a worker takes it over.
	RunRunning RunStatus = "RUNNING"
	// RunWaiting: paused on a hash-bound approval; no lease. Entered by a pause;
	// left by Resume (after Approve; a worker resumes it by itself), Reject,
	// Cancel or expiry.
	RunWaiting RunStatus = "WAITING_FOR_APPROVAL"
	// RunCompleted: terminal; the goal was completed.
	RunCompleted RunStatus = "COMPLETED"
	// RunFailed: terminal; a failure, limit, abort or internal error ended it.
	RunFailed RunStatus = "FAILED"
	// RunCancelled: terminal; an operator cancelled or rejected, or an approval expired.
	RunCancelled RunStatus = "CANCELLED"
)

// Runnable reports whether a worker may claim a run in this status (given a
// free or lapsed lease, and for a waiting run a decided approval).
func (s RunStatus) Runnable() bool {
	return s == RunEnqueued || s == RunRunning || s == RunWaiting
}

// Terminal reports whether no transition leaves the status.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// Valid reports whether s is a status the runtime writes.
func (s RunStatus) Valid() bool {
	switch s {
	case RunEnqueued, RunRunning, RunWaiting, RunCompleted, RunFailed, RunCancelled:
		return true
	}
	return false
}

// TerminalReason names why a run ended.
type TerminalReason string

// The named terminal reasons.
const (
	ReasonGoalCompleted        TerminalReason = "goal_completed"
	ReasonGoalFailed           TerminalReason = "goal_failed"
	ReasonLimitSteps           TerminalReason = "limit_steps"
	ReasonLimitModelCalls      TerminalReason = "limit_model_calls"
	ReasonLimitTokens          TerminalReason = "limit_tokens"
	ReasonLimitCost            TerminalReason = "limit_cost"
	ReasonLimitActiveTime      TerminalReason = "limit_active_time"
	ReasonLimitElapsedTime     TerminalReason = "limit_elapsed_time"
	ReasonApprovalExpired      TerminalReason = "approval_expired"
	ReasonModelUnavailable     TerminalReason = "model_unavailable"
	ReasonRepeatedToolFailures TerminalReason = "repeated_tool_failures"
	ReasonLoopDetected         TerminalReason = "loop_detected"
	ReasonPolicyAbort          TerminalReason = "policy_abort"
	ReasonToolAbort            TerminalReason = "tool_abort"
	ReasonApprovalRejected     TerminalReason = "approval_rejected"
	ReasonOperatorCancelled    TerminalReason = "operator_cancelled"
	ReasonReconcileConflict    TerminalReason = "reconcile_conflict"
	ReasonAgentError           TerminalReason = "agent_error"
	ReasonInternalError        TerminalReason = "internal_error"
)

// Usage counts model tokens. CachedInputTokens is a subset of InputTokens.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
}

// Micros is an amount of money in millionths of a currency unit.
type Micros int64

// Dollars is m as the operator surfaces print money: a dollar sign and
// four decimal places, so a hundredth of a cent still shows ("$0.0500" is
// 50000 micros). A remainder under a hundredth of a cent rounds to the
// nearest, half away from zero. It is computed in integers, exact for
// every Micros.
func (m Micros) Dollars() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-(m+1))+1 // -MinInt64 overflows; this does not
	}
	u = (u + 50) / 100 // hundredths of a cent, rounded
	return fmt.Sprintf("%s$%d.%04d", sign, u/10_000, u%10_000)
}

// Run is one agent run as stored.
type Run struct {
	ID            string          `json:"id"`
	Goal          string          `json:"goal"`
	Status        RunStatus       `json:"status"`
	Reason        TerminalReason  `json:"reason,omitempty"`
	ReasonDetail  string          `json:"reason_detail,omitempty"`
	Limits        Limits          `json:"limits"`
	StepCount     int             `json:"step_count"`
	CreatedAt     time.Time       `json:"created_at"`
	StartedAt     time.Time       `json:"started_at,omitzero"`
	FinishedAt    time.Time       `json:"finished_at,omitzero"`
	Result        json.RawMessage `json:"result,omitempty"`
	ModelCalls    int             `json:"model_calls"`
	Usage         Usage           `json:"usage"`
	EstimatedCost Micros          `json:"estimated_cost_micros"`
	ActiveTime    time.Duration   `json:"active_time"`
	// LeaseOwner and LeaseExpiresAt are set while a process holds the run.
	LeaseOwner     string    `json:"lease_owner,omitempty"`
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
	// Generation is the fencing generation: bumped at each takeover and named in
	// every write a lease holder makes.
	Generation int64 `json:"generation"`
	// DecodeError is set when a stored column would not decode.
	DecodeError string `json:"decode_error,omitempty"`
}
