package agentrt

import (
	"encoding/json"
	"time"
)

// EventType names an event. Types are dotted strings.
type EventType string

// Event types written by the runtime.
const (
	EventRunCreated      EventType = "run.created"
	EventRunStarted      EventType = "run.started"
	EventRunFinished     EventType = "run.finished"
	EventRunResumed      EventType = "run.resumed"
	EventStepStarted     EventType = "step.started"
	EventStepDecided     EventType = "step.decided"
	EventStepPolicy      EventType = "step.policy"
	EventToolStarted     EventType = "step.tool_started"
	EventToolFinished    EventType = "step.tool_finished"
	EventStepFailed      EventType = "step.failed"
	EventStepInterrupted EventType = "step.interrupted"
	EventApprovalRequest EventType = "approval.requested"
	EventApprovalDecided EventType = "approval.decided"
	EventLimitExceeded   EventType = "limit.exceeded"
	EventLoopDetected    EventType = "loop.detected"
	EventLeaseTakenOver  EventType = "lease.taken_over"
	EventModelDispatched EventType = "model.dispatched"
	EventModelCompleted  EventType = "model.completed"
	EventModelFailed     EventType = "model.failed"
)

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
