package agentrt

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// ErrUnknownEvent marks an event whose type the catalogue does not hold: a
// newer runtime's, another program's, or one forged into the chain.
var ErrUnknownEvent = errors.New("agentrt: unknown event type")

// EventPayloadError reports a payload that does not decode as its type's.
type EventPayloadError struct {
	Seq    int64
	Type   EventType
	Reason string
}

func (e *EventPayloadError) Error() string {
	return fmt.Sprintf("agentrt: event %d (%s): the payload does not decode: %s", e.Seq, e.Type, e.Reason)
}

// Unwrap lets errors.Is match ErrUnknownEvent for an unknown type.
func (e *EventPayloadError) Unwrap() error {
	if e.Reason == unknownReason {
		return ErrUnknownEvent
	}
	return nil
}

const unknownReason = "the catalogue holds no such event type"

// EventKind describes one event type of the catalogue.
type EventKind struct {
	Type EventType
	// Payload is the zero value of the payload's type (a struct value).
	Payload any
}

// catalogue maps each event type the runtime writes to its payload type.
var catalogue = []EventKind{
	{EventRunCreated, RunCreatedPayload{}},
	{EventRunStarted, RunStartedPayload{}},
	{EventRunClaimed, RunClaimedPayload{}},
	{EventRunFinished, RunFinishedPayload{}},
	{EventRunResumed, RunResumedPayload{}},
	{EventRunWaiting, RunWaitingPayload{}},
	{EventRunErased, RunErasedPayload{}},
	{EventStepStarted, StepStartedPayload{}},
	{EventStepDecided, Decision{}},
	{EventStepPolicy, StepPolicyPayload{}},
	{EventToolStarted, ToolStartedPayload{}},
	{EventToolFinished, ToolFinishedPayload{}},
	{EventDisclosureApplied, DisclosureAppliedPayload{}},
	{EventStepFailed, StepFailedPayload{}},
	{EventStepInterrupted, StepInterruptedPayload{}},
	{EventApprovalRequest, ApprovalRequestedPayload{}},
	{EventApprovalDecided, ApprovalDecidedPayload{}},
	{EventLimitExceeded, LimitExceededPayload{}},
	{EventLoopDetected, LoopDetectedPayload{}},
	{EventLeaseTakenOver, LeaseTakenOverPayload{}},
	{EventModelDispatched, ModelDispatchedPayload{}},
	{EventModelCompleted, ModelCallFinishedPayload{}},
	{EventModelFailed, ModelCallFinishedPayload{}},
	{EventEgressDenied, EgressDeniedPayload{}},
	{EventPriceVersionAdded, PriceVersionAddedPayload{}},
	{EventBudgetChanged, BudgetChangedPayload{}},
	{EventBudgetReconciled, BudgetReconciledPayload{}},
	{EventApproverInvited, ApproverInvitedPayload{}},
	{EventApproverEnrolled, ApproverEnrolledPayload{}},
	{EventApproverRemoved, ApproverRemovedPayload{}},
	{EventApprovalVoted, ApprovalVotedPayload{}},
	{EventApproverAccessSet, ApproverAccessSetPayload{}},
}

var catalogueIndex = func() map[EventType]reflect.Type {
	m := make(map[EventType]reflect.Type, len(catalogue))
	for _, k := range catalogue {
		m[k.Type] = reflect.TypeOf(k.Payload)
	}
	return m
}()

// EventCatalogue returns every event type the runtime writes, with its
// payload type, in the order docs/events.md lists them.
func EventCatalogue() []EventKind { return append([]EventKind(nil), catalogue...) }

// DecodePayload decodes e's payload as its type's catalogue type and
// returns it as a value of that type (RunFinishedPayload for run.finished,
// Decision for step.decided). An unknown type is an *EventPayloadError
// matching ErrUnknownEvent; a payload that does not decode is an
// *EventPayloadError saying why.
func DecodePayload(e Event) (any, error) {
	t, ok := catalogueIndex[e.Type]
	if !ok {
		return nil, &EventPayloadError{Seq: e.Seq, Type: e.Type, Reason: unknownReason}
	}
	p := reflect.New(t)
	raw := e.Payload
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, &EventPayloadError{Seq: e.Seq, Type: e.Type, Reason: err.Error()}
	}
	return p.Elem().Interface(), nil
}

// PayloadAs decodes e's payload as T, refusing an event whose catalogue
// type is not T: a reader that wants one type says so once.
func PayloadAs[T any](e Event) (T, error) {
	var zero T
	v, err := DecodePayload(e)
	if err != nil {
		return zero, err
	}
	p, ok := v.(T)
	if !ok {
		return zero, &EventPayloadError{Seq: e.Seq, Type: e.Type, Reason: fmt.Sprintf("its payload is a %T, not a %T", v, zero)}
	}
	return p, nil
}
