package agentrt

import (
	"encoding/json"
	"time"
)

// The catalogue of event payloads: one type per event type the runtime
// writes. The writers build these types and the readers decode them
// (DecodePayload), so a payload's shape has one owner. docs/events.md and
// docs/events/*.schema.json are generated from this file.
//
// A field tagged audit:"content" holds what a model chose, a tool produced
// or a person wrote (arguments, results, model text, notes): erasure
// removes it. A field tagged audit:"digest" is an unkeyed hash of content
// (a result's canonical hash, an approval's hash over the arguments): it
// would confirm a guess of the content, so erasure removes it too. Every
// other field is metadata (ids, times, statuses, tool names, spec hashes,
// counts, costs), which erasure keeps.
//
// Field order is the order the bytes are written in. A payload's SHA-256
// is in the chain, so the encoding of a type never changes silently: a
// test pins the bytes each writer produces.

// RunCreatedPayload is the payload of run.created.
type RunCreatedPayload struct {
	// Goal is the run's goal as the caller gave it.
	Goal string `json:"goal" audit:"content"`
	// Limits are the limits the run was created with.
	Limits Limits `json:"limits"`
	// Tools lists the registered tools: name, side effect and spec hash.
	Tools json.RawMessage `json:"tools"`
	// Enqueued marks a run created to wait for a worker.
	Enqueued bool `json:"enqueued,omitempty"`
	// Disclosure is the engine's disclosure configuration as it describes
	// itself (DisclosureDescriber), in canonical form; absent when the
	// engine has none or it does not describe itself.
	Disclosure json.RawMessage `json:"disclosure,omitempty"`
	// Trace is the W3C trace context of the request that began the run
	// (WithTraceContext); absent when it came with none.
	Trace *TraceContext `json:"trace,omitempty"`
}

// RunStartedPayload is the payload of run.started: an empty object.
type RunStartedPayload struct{}

// RunClaimedPayload is the payload of run.claimed.
type RunClaimedPayload struct {
	// Generation is the fencing generation the claim takes.
	Generation int64 `json:"generation"`
	// Owner is the worker's lease owner.
	Owner string `json:"owner"`
	// Status is the run's status when claimed.
	Status RunStatus `json:"status"`
}

// RunFinishedPayload is the payload of run.finished.
type RunFinishedPayload struct {
	// By names the operator who ended the run; absent when the runtime did.
	By *string `json:"by,omitempty"`
	// Detail says why, in words (a tool's abort message, an operator's note).
	Detail string `json:"detail" audit:"content"`
	// Reason is the terminal reason.
	Reason TerminalReason `json:"reason"`
	// Status is the terminal status.
	Status RunStatus `json:"status"`
	// Steps is how many steps the run started.
	Steps int `json:"steps"`
}

// RunResumedPayload is the payload of run.resumed.
type RunResumedPayload struct {
	// After says what the run resumed after: interruption, denial,
	// invalid_on_resume; absent when it resumed on a grant.
	After string `json:"after,omitempty"`
	// ApprovalID is the grant the run resumed on.
	ApprovalID string `json:"approval_id,omitempty"`
}

// RunWaitingPayload is the payload of run.waiting.
type RunWaitingPayload struct {
	// ApprovalIDs are the approvals the run waits on: each awaiting step's
	// latest, pending or granted and not yet executed.
	ApprovalIDs []string `json:"approval_ids"`
}

// RunErasedPayload is the payload of run.erased: who erased the run and
// why (the event's time says when), and for each of the run's events the
// digest the chain holds for the payload that was there and the SHA-256 of
// the payload left, so what remains is proved unaltered.
type RunErasedPayload struct {
	// By names who erased the run.
	By string `json:"by"`
	// Reason says why, as they gave it.
	Reason string `json:"reason"`
	// Events lists every event of the run before this one.
	Events []ErasedEvent `json:"events"`
	// Rows counts the stored rows whose content was removed, by table.
	Rows map[string]int `json:"rows"`
}

// ErasedEvent is one event erasure went over.
type ErasedEvent struct {
	// Seq is the event's place in the chain.
	Seq int64 `json:"seq"`
	// Digest is the hex digest the chain hashed for the payload before
	// erasure (keyed by the run's salt, which erasure deleted).
	Digest string `json:"digest"`
	// Kept is the hex SHA-256 of the payload left: its metadata.
	Kept string `json:"kept"`
}

// StepStartedPayload is the payload of step.started.
type StepStartedPayload struct {
	// Index is the step's position in the run, from 0.
	Index int `json:"index"`
}

// StepPolicyPayload is the payload of step.policy: the policy's decision, and for
// the evaluation that let a tool run, the policy's id and the run's view.
type StepPolicyPayload struct {
	PolicyDecision
	// PolicyID names the policy that decided.
	PolicyID string `json:"policy_id,omitempty"`
	// SpecHash is the hash of the tool spec the request named.
	SpecHash string `json:"spec_hash,omitempty"`
	// View is the run as the policy saw it.
	View ViewSummary `json:"view,omitzero"`
}

// ViewSummary is the run's state a policy judged.
type ViewSummary struct {
	Status     RunStatus `json:"status"`
	StepCount  int       `json:"step_count"`
	ModelCalls int       `json:"model_calls"`
	Usage      Usage     `json:"usage"`
	Cost       Micros    `json:"estimated_cost_micros"`
	ActiveMS   int64     `json:"active_ms"`
	Steps      int       `json:"steps"`
	Approvals  int       `json:"approvals"`
}

// ToolStartedPayload is the payload of step.tool_started.
type ToolStartedPayload struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Args are the arguments as recorded.
	Args json.RawMessage `json:"args" audit:"content"`
	// ApprovalID is the grant the call runs under.
	ApprovalID string `json:"approval_id,omitempty"`
}

// ToolFinishedPayload is the payload of step.tool_finished. An outcome recorded
// after the run had already ended (Late) carries the observation instead
// of the summary, hash and duration.
type ToolFinishedPayload struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// DurationMS is how long the call took.
	DurationMS int64 `json:"duration_ms"`
	// Summary is the tool's own summary of a result.
	Summary string `json:"summary,omitempty" audit:"content"`
	// ContentHash is the canonical hash of the result.
	ContentHash string `json:"content_hash,omitempty" audit:"digest"`
	// Error is the failure's summary.
	Error string `json:"error,omitempty" audit:"content"`
	// Late marks an outcome recorded after the run ended under it.
	Late bool `json:"late,omitempty"`
	// Blocks are the result's typed blocks as the chain holds them: type,
	// MIME type, size and the SHA-256 of the bytes as sent.
	Blocks []BlockDigest `json:"blocks,omitempty"`
	// FailureClass is a tool error's class.
	FailureClass FailureClass `json:"failure_class,omitempty" audit:"content"`
	// Observation is a late outcome's observation.
	Observation *Observation `json:"observation,omitempty"`
}

// DisclosureAppliedPayload is the payload of disclosure.applied: what the
// engine's Disclosure removed, redacted or withheld of one tool outcome,
// written before the outcome is recorded. It names rules and places, and
// digests each value found under the run's salt; it never holds a value.
type DisclosureAppliedPayload struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Blocked marks an outcome withheld whole: the step records a tool error.
	Blocked bool `json:"blocked,omitempty"`
	// Count is how many findings there were.
	Count int `json:"count"`
	// Rules lists the rules that found something, sorted.
	Rules []string `json:"rules"`
	// Findings lists each finding in the order the rules reported them.
	Findings []DisclosureFindingRecord `json:"findings"`
}

// DisclosureFindingRecord is one finding as the chain holds it.
type DisclosureFindingRecord struct {
	// Rule names the rule.
	Rule string `json:"rule"`
	// Action is what the rule did there.
	Action DisclosureAction `json:"action"`
	// Pointer is where: a JSON pointer into the content, or #summary,
	// #failure_message, #blocks/<i>/text. Object keys are the tool's, so
	// erasure removes it.
	Pointer string `json:"pointer" audit:"content"`
	// Digest is the hex SHA-256 of the value found, keyed by the run's
	// salt: it tells two findings of one value apart from two of different
	// values, and confirms no guess without the salt.
	Digest string `json:"digest,omitempty" audit:"digest"`
}

// MarshalJSON writes a late outcome as {late, observation, tool}, the form
// it has always had, and any other as the struct's fields in order.
func (p ToolFinishedPayload) MarshalJSON() ([]byte, error) {
	if p.Late {
		return json.Marshal(struct {
			Late        bool         `json:"late"`
			Observation *Observation `json:"observation"`
			Tool        string       `json:"tool"`
		}{true, p.Observation, p.Tool})
	}
	type plain ToolFinishedPayload
	return json.Marshal(plain(p))
}

// StepFailedPayload is the payload of step.failed.
type StepFailedPayload struct {
	// Detail says why the step failed.
	Detail string `json:"detail" audit:"content"`
	// Observation is the failure's observation kind.
	Observation ObservationKind `json:"observation"`
	// ContentHash is the canonical hash of the observation's content.
	ContentHash string `json:"content_hash" audit:"digest"`
}

// StepInterruptedPayload is the payload of step.interrupted.
type StepInterruptedPayload struct {
	// Observation is the interrupted observation recorded on the step.
	Observation *Observation `json:"observation"`
	// PreviousStatus is the status the step was found in.
	PreviousStatus StepStatus `json:"previous_status"`
}

// ApprovalRequestedPayload is the payload of approval.requested.
type ApprovalRequestedPayload struct {
	// ApprovalID names the approval.
	ApprovalID string `json:"approval_id"`
	// Capability is what the policy asks to grant.
	Capability json.RawMessage `json:"capability" audit:"content"`
	// Hash binds the approval to the request (ApprovalHash).
	Hash string `json:"hash" audit:"digest"`
	// Kind is the policy's kind of approval.
	Kind string `json:"kind"`
	// Presentation is what the approver is shown.
	Presentation json.RawMessage `json:"presentation" audit:"content"`
	// Reason is the policy's reason (policy-authored text, which may
	// quote the call's arguments).
	Reason string `json:"reason" audit:"content"`
	// Requirement is the stages of votes the policy asked for, if any,
	// and PolicyVersion the policy's id then; the hash binds both.
	Requirement   *Requirement `json:"requirement,omitempty"`
	PolicyVersion string       `json:"policy_version,omitempty"`
}

// ApprovalDecidedPayload is the payload of approval.decided.
type ApprovalDecidedPayload struct {
	// ApprovalID names the approval.
	ApprovalID string `json:"approval_id"`
	// ApproverID is the enrolled approver who signed, for a signed decision.
	ApproverID string `json:"approver_id,omitempty"`
	// By names who decided ("" for an expiry).
	By string `json:"by"`
	// CredentialID is the signing credential, for a signed decision.
	CredentialID string `json:"credential_id,omitempty"`
	// Expiry, for an expiry, names which: ExpiryDecision (pending past
	// its ApprovalTTL) or ExpiryExecution (granted, not executed within
	// GrantTTL).
	Expiry ApprovalExpiry `json:"expiry,omitempty"`
	// Note is the decider's note, or why the approval expired.
	Note string `json:"note" audit:"content"`
	// Signature is the decision's signature, for a signed decision. It
	// signs the approval's hash over the arguments and the note, so it
	// would confirm a guess of either: erasure removes it.
	Signature *DecisionSignature `json:"signature,omitempty" audit:"digest"`
	// Status is the approval's new status.
	Status ApprovalStatus `json:"status"`
}

// LimitExceededPayload is the payload of limit.exceeded.
type LimitExceededPayload struct {
	// Detail says which limit and by how much (for an unavailable model,
	// the provider's error text).
	Detail string `json:"detail" audit:"content"`
	// Reason is the terminal reason the limit maps to.
	Reason TerminalReason `json:"reason"`
}

// LoopDetectedPayload is the payload of loop.detected.
type LoopDetectedPayload struct {
	// ArgsHash is the canonical hash of the repeated arguments.
	ArgsHash string `json:"args_hash" audit:"digest"`
	// ObservationHash is the canonical hash of the repeated result.
	ObservationHash string `json:"observation_hash" audit:"digest"`
	// Repeats is how many times in a row the call repeated.
	Repeats int `json:"repeats"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
}

// LeaseTakenOverPayload is the payload of lease.taken_over.
type LeaseTakenOverPayload struct {
	// Generation is the fencing generation taken, when a worker's claim took it.
	Generation int64 `json:"generation,omitempty"`
	// Owner is the new lease owner.
	Owner string `json:"owner"`
	// PreviousExpiresAt is when the previous lease expired.
	PreviousExpiresAt time.Time `json:"previous_expires_at"`
	// PreviousOwner is the owner the lease was taken from.
	PreviousOwner string `json:"previous_owner"`
	// Status is the run's status, when a worker's claim took it.
	Status RunStatus `json:"status,omitempty"`
}

// ModelDispatchedPayload is the payload of model.dispatched.
type ModelDispatchedPayload struct {
	CallID          string `json:"call_id"`
	Attempt         int    `json:"attempt"`
	Model           string `json:"model"`
	Provider        string `json:"provider,omitempty"`
	MaxOutputTokens int64  `json:"max_output_tokens"`
	// Estimate is the usage reserved before the call.
	Estimate      Usage  `json:"estimate"`
	EstimatedCost Micros `json:"estimated_cost_micros"`
	// Egress is the request's manifest, which the egress rules allowed.
	Egress *EgressManifest `json:"egress,omitempty"`
	// PriceVersion names the price table the reservations are priced at.
	PriceVersion string `json:"price_version,omitempty"`
	// Reservations are the call's holds on shared budgets.
	Reservations []BudgetHold `json:"reservations,omitempty"`
}

// ModelCallFinishedPayload is the payload of model.completed and model.failed.
type ModelCallFinishedPayload struct {
	CallID    string          `json:"call_id"`
	Attempt   int             `json:"attempt"`
	Status    ModelCallStatus `json:"status"`
	Model     string          `json:"model"`
	Usage     Usage           `json:"usage"`
	Cost      Micros          `json:"cost_micros"`
	LatencyMS int64           `json:"latency_ms"`
	// Error is the failure as the provider reported it.
	Error string `json:"error,omitempty" audit:"content"`
	// StopReason is why the provider stopped generating, as the adapter
	// reported it (completed attempts only).
	StopReason string `json:"stop_reason,omitempty" audit:"content"`
	// Late marks an outcome recorded after the run left this session.
	Late bool `json:"late,omitempty"`
	// PriceVersion names the price table the settlements are priced at.
	PriceVersion string `json:"price_version,omitempty"`
	// Settlements say what became of each of the call's budget
	// reservations.
	Settlements []SettlementNote `json:"settlements,omitempty"`
}

// BudgetHold is one call's reservation on one budget, as model.dispatched
// records it.
type BudgetHold struct {
	BudgetID string `json:"budget_id"`
	Budget   string `json:"budget"`
	// Window is the start of the budget window the hold counts in.
	Window    time.Time `json:"window_start,omitzero"`
	Reserved  Amount    `json:"reserved"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SettlementNote is what became of one hold, as model.completed and
// model.failed record it: settled at Actual (the unused part of Reserved
// released), uncertain (all of Reserved still held until reconciled), or
// already settled by an operator before the outcome was recorded.
type SettlementNote struct {
	BudgetID string            `json:"budget_id"`
	Budget   string            `json:"budget"`
	Status   ReservationStatus `json:"status"`
	Reserved Amount            `json:"reserved"`
	Actual   Amount            `json:"actual"`
	// Skipped marks a hold an operator had already reconciled.
	Skipped bool `json:"already_reconciled,omitempty"`
}

// PriceVersionAddedPayload is the payload of price.version_added: a price
// table stored for the first time (a store-wide event, on no run).
type PriceVersionAddedPayload struct {
	// ID is the version's id, derived from the table.
	ID string `json:"id"`
	// Table maps each model to its price.
	Table PriceTable `json:"table"`
}

// EgressDeniedPayload is the payload of egress.denied: the manifest of the
// request the egress rules refused, and why. The request itself is not
// recorded; its SHA-256 is a digest of model content.
type EgressDeniedPayload struct {
	EgressManifest
	// Reason names the rule that refused the request.
	Reason string `json:"reason"`
}

// BudgetChangedPayload is the payload of budget.changed (a store-wide
// event): what was done, by whom, and the budget as it stands after.
type BudgetChangedPayload struct {
	// Action is "added", "set" or "retired".
	Action string `json:"action"`
	By     string `json:"by"`
	Budget Budget `json:"budget"`
}

// BudgetReconciledPayload is the payload of budget.reconciled: an operator
// settling an uncertain or expired reservation.
type BudgetReconciledPayload struct {
	CallID   string            `json:"call_id"`
	BudgetID string            `json:"budget_id"`
	Budget   string            `json:"budget"`
	From     ReservationStatus `json:"from"`
	Reserved Amount            `json:"reserved"`
	Actual   Amount            `json:"actual"`
	By       string            `json:"by"`
	// Note is the operator's account, as they wrote it.
	Note string `json:"note,omitempty" audit:"content"`
}

// ApproverInvitedPayload is the payload of approver.invited.
type ApproverInvitedPayload struct {
	By string `json:"by"`
	// ExpiresAt is when the invitation stops being usable (RFC 3339).
	ExpiresAt string `json:"expires_at"`
	InviteID  string `json:"invite_id"`
	Name      string `json:"name"`
}

// ApproverEnrolledPayload is the payload of approver.enrolled.
type ApproverEnrolledPayload struct {
	Algorithm    string `json:"algorithm"`
	ApproverID   string `json:"approver_id"`
	By           string `json:"by"`
	CredentialID string `json:"credential_id"`
	// InviteID is the invitation enrolled through, if any.
	InviteID string `json:"invite_id,omitempty"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Origin   string `json:"origin"`
	// PublicKey is base64 of the key's PKIX DER.
	PublicKey string `json:"public_key"`
	RPID      string `json:"rp_id"`
}

// ApproverRemovedPayload is the payload of approver.removed.
type ApproverRemovedPayload struct {
	ApproverID string `json:"approver_id"`
	By         string `json:"by"`
	Name       string `json:"name"`
}

// ApprovalVotedPayload is the payload of approval.voted: one approver's
// vote on an approval that has a Requirement.
type ApprovalVotedPayload struct {
	// ApprovalID names the approval.
	ApprovalID string `json:"approval_id"`
	// ApproverID is the enrolled approver who voted.
	ApproverID string `json:"approver_id"`
	// By is the approver's enrolled name.
	By string `json:"by"`
	// CredentialID is the signing credential, for a signed vote.
	CredentialID string `json:"credential_id,omitempty"`
	// Decision is approve or reject.
	Decision string `json:"decision"`
	// Note is the voter's note.
	Note string `json:"note" audit:"content"`
	// Signature is the vote's signature, for a signed vote: over the
	// approval's hash and the note, so erasure removes it.
	Signature *DecisionSignature `json:"signature,omitempty" audit:"digest"`
	// Stage is the 1-based stage the vote was cast in.
	Stage int `json:"stage"`
}

// ApproverAccessSetPayload is the payload of approver.access_set: an
// approver's roles and scope, as set, and who set them.
type ApproverAccessSetPayload struct {
	ApproverID string        `json:"approver_id"`
	By         string        `json:"by"`
	Name       string        `json:"name"`
	Roles      []string      `json:"roles"`
	Scope      ApproverScope `json:"scope"`
}
