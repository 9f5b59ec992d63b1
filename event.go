package agentrt

import (
	"encoding/json"
	"time"
)

// EventType names an event. Types are dotted strings.
type EventType string

// Every event type the runtime writes to the chain. Each has one payload
// type in the catalogue (payloads.go); DecodePayload reads any of them.
const (
	// EventRunCreated opens a run: RunCreatedPayload.
	EventRunCreated EventType = "run.created"
	// EventRunStarted moves a run to RUNNING: RunStartedPayload.
	EventRunStarted EventType = "run.started"
	// EventRunClaimed records a worker leasing an enqueued or stranded run: RunClaimedPayload.
	EventRunClaimed EventType = "run.claimed"
	// EventRunFinished ends a run: RunFinishedPayload.
	EventRunFinished EventType = "run.finished"
	// EventRunResumed moves a WAITING or interrupted run on: RunResumedPayload.
	EventRunResumed EventType = "run.resumed"
	// EventRunWaiting moves a RUNNING run to WAITING_FOR_APPROVAL once no
	// step is in flight and steps that asked for approval while a sibling
	// ran still wait: RunWaitingPayload.
	EventRunWaiting EventType = "run.waiting"
	// EventRunErased records the erasure of a terminal run's content: RunErasedPayload.
	EventRunErased EventType = "run.erased"
	// EventStepStarted opens a step: StepStartedPayload.
	EventStepStarted EventType = "step.started"
	// EventStepDecided records the agent's decision as stored: Decision.
	EventStepDecided EventType = "step.decided"
	// EventStepPolicy records the policy's decision on a tool call: StepPolicyPayload.
	EventStepPolicy EventType = "step.policy"
	// EventToolStarted records that a tool is being called: ToolStartedPayload.
	EventToolStarted EventType = "step.tool_started"
	// EventToolFinished records what a tool returned: ToolFinishedPayload.
	EventToolFinished EventType = "step.tool_finished"
	// EventStepFailed records a step's failure: StepFailedPayload.
	EventStepFailed EventType = "step.failed"
	// EventStepInterrupted records a step found in flight on resume: StepInterruptedPayload.
	EventStepInterrupted EventType = "step.interrupted"
	// EventApprovalRequest records a step paused for approval: ApprovalRequestedPayload.
	EventApprovalRequest EventType = "approval.requested"
	// EventApprovalDecided records an approval's decision or expiry: ApprovalDecidedPayload.
	EventApprovalDecided EventType = "approval.decided"
	// EventLimitExceeded records a limit that ended a run: LimitExceededPayload.
	EventLimitExceeded EventType = "limit.exceeded"
	// EventLoopDetected records a repeated call that ended a run: LoopDetectedPayload.
	EventLoopDetected EventType = "loop.detected"
	// EventLeaseTakenOver records a lease taken from another owner: LeaseTakenOverPayload.
	EventLeaseTakenOver EventType = "lease.taken_over"
	// EventModelDispatched records a model call sent: ModelDispatchedPayload.
	EventModelDispatched EventType = "model.dispatched"
	// EventModelCompleted records a model call's success: ModelCallFinishedPayload.
	EventModelCompleted EventType = "model.completed"
	// EventModelFailed records a model call's failure: ModelCallFinishedPayload.
	EventModelFailed EventType = "model.failed"
	// EventDisclosureApplied records what the disclosure rules removed,
	// redacted or withheld of a tool's outcome: DisclosureAppliedPayload.
	EventDisclosureApplied EventType = "disclosure.applied"
	// EventApproverInvited records an enrollment invitation (no run): ApproverInvitedPayload.
	EventApproverInvited EventType = "approver.invited"
	// EventApproverEnrolled records an approver's enrollment (no run): ApproverEnrolledPayload.
	EventApproverEnrolled EventType = "approver.enrolled"
	// EventApproverRemoved records an approver's removal (no run): ApproverRemovedPayload.
	EventApproverRemoved EventType = "approver.removed"
	// EventApprovalVoted records one approver's vote on an approval with
	// a requirement: ApprovalVotedPayload.
	EventApprovalVoted EventType = "approval.voted"
	// EventApproverAccessSet records an approver's roles and scope, and
	// who set them (no run): ApproverAccessSetPayload.
	EventApproverAccessSet EventType = "approver.access_set"
)

// Budget events. A budget's changes belong to no run (RunID ""); a
// reconciliation belongs to the run whose call it settles.
const (
	// EventBudgetChanged records a budget added, its ceilings set, or its
	// retirement, naming who made the change.
	EventBudgetChanged EventType = "budget.changed"
	// EventBudgetReconciled records an operator settling an uncertain
	// reservation with a figure of their own.
	EventBudgetReconciled EventType = "budget.reconciled"
	// EventPriceVersionAdded records a price version stored for the first
	// time. It belongs to no run.
	EventPriceVersionAdded EventType = "price.version_added"
)

// EventEgressDenied records the manifest of a provider request the egress
// rules denied, and why; the request was not sent. An allowed request's
// manifest is in its model.dispatched event, written before transport.
const EventEgressDenied EventType = "egress.denied"

// Event explains one change. Events form a hash chain across all runs.
type Event struct {
	Seq     int64           `json:"seq"`
	RunID   string          `json:"run_id"`
	StepID  string          `json:"step_id,omitempty"`
	At      time.Time       `json:"at"`
	Type    EventType       `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// Observer hears each event only after the transaction that wrote it commits.
// It is called from whichever goroutine committed and must not block for long.
type Observer func(Event)
