package agentrt

import (
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt/internal/canon"
)

// StepStatus is where a step is.
type StepStatus string

const (
	// StepDeciding: the step started and the agent is deciding. Entered at step
	// start; left when the decision is validated and judged.
	StepDeciding StepStatus = "deciding"
	// StepAwaitingApproval: the step's request waits for an operator. Entered by
	// a pause; left by resume (executing), reject or cancel (failed).
	StepAwaitingApproval StepStatus = "awaiting_approval"
	// StepExecuting: the tool start is durable and the tool runs. Left by its
	// outcome (done/failed) or a takeover (interrupted).
	StepExecuting StepStatus = "executing"
	// StepDone: terminal; the step succeeded.
	StepDone StepStatus = "done"
	// StepFailed: terminal; invalid decision, denial, tool error, or an end.
	StepFailed StepStatus = "failed"
	// StepInterrupted: a takeover found the step in flight. An interrupted step
	// that was executing may go back to awaiting_approval once.
	StepInterrupted StepStatus = "interrupted"
)

// InFlight reports whether a process was working on the step.
func (s StepStatus) InFlight() bool { return s == StepDeciding || s == StepExecuting }

// ObservationKind classifies what a step observed.
type ObservationKind string

const (
	ObsToolResult      ObservationKind = "tool_result"
	ObsToolError       ObservationKind = "tool_error"
	ObsPolicyDenied    ObservationKind = "policy_denied"
	ObsInvalidDecision ObservationKind = "invalid_decision"
	ObsInterrupted     ObservationKind = "interrupted"
)

// Failure reports whether the observation counts as a failed step.
func (k ObservationKind) Failure() bool { return k != ObsToolResult }

// Observation is what a step produced for the agent to read.
type Observation struct {
	Kind        ObservationKind `json:"kind"`
	Content     json.RawMessage `json:"content,omitempty" audit:"content"`
	Summary     string          `json:"summary,omitempty" audit:"content"`
	ContentHash string          `json:"content_hash,omitempty" audit:"digest"`
	// Blocks are a tool result's typed blocks, bounded (content.go).
	Blocks []ResultBlock `json:"blocks,omitempty" audit:"content"`
	// FailureClass, on a tool error, says what kind of failure it was;
	// FailureMessage is the source's own account, bounded.
	FailureClass   FailureClass `json:"failure_class,omitempty" audit:"content"`
	FailureMessage string       `json:"failure_message,omitempty" audit:"content"`
}

// Failure reports whether the observation counts as a failed step.
func (o Observation) Failure() bool { return o.Kind.Failure() }

// Step is one step of a run as stored.
type Step struct {
	ID          string          `json:"id"`
	RunID       string          `json:"run_id"`
	Index       int             `json:"index"`
	Status      StepStatus      `json:"status"`
	Decision    *Decision       `json:"decision,omitempty"`
	Policy      *PolicyDecision `json:"policy,omitempty"`
	Observation *Observation    `json:"observation,omitempty"`
	StartedAt   time.Time       `json:"started_at"`
	FinishedAt  time.Time       `json:"finished_at,omitzero"`
	SpecHash    string          `json:"spec_hash,omitempty"`
	PolicyID    string          `json:"policy_id,omitempty"`
	// DecodeError is set when a stored column would not decode; the field it
	// names is left empty.
	DecodeError string `json:"decode_error,omitempty"`
}

// Status lists the engine's compare-and-sets name often, shared so that
// naming one allocates nothing. They are never written to.
var (
	onlyRunning   = []RunStatus{RunRunning}
	onlyDeciding  = []StepStatus{StepDeciding}
	onlyExecuting = []StepStatus{StepExecuting}
	onlyAwaiting  = []StepStatus{StepAwaitingApproval}
)

// statusList is the shared one-element list for s.
func statusList(s StepStatus) []StepStatus {
	switch s {
	case StepDeciding:
		return onlyDeciding
	case StepExecuting:
		return onlyExecuting
	case StepAwaitingApproval:
		return onlyAwaiting
	}
	return []StepStatus{s}
}

// failure builds a runtime observation of a failure: {"error": msg}.
func failure(kind ObservationKind, msg string) *Observation {
	return observation(kind, map[string]string{"error": msg}, msg)
}

// observation builds a runtime observation from string-only content, which
// always encodes.
func observation(kind ObservationKind, content map[string]string, summary string) *Observation {
	b, _ := json.Marshal(content)
	h, _ := canon.Hash(b)
	return &Observation{Kind: kind, Content: b, Summary: jsonString(summary), ContentHash: h}
}
