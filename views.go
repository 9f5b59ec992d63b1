package agentrt

import (
	"bytes"
	"encoding/json"
	"iter"
	"slices"
	"time"
	"unsafe"
)

// JSON is a recorded JSON value that cannot be changed: a view hands out the
// record's own bytes in it, so reading costs nothing however large the value
// is, and nothing written by one consumer reaches the record, another
// consumer, or a later view. The empty JSON is an absent value. Convert it
// with string(j) to read it, or Raw for bytes of one's own.
type JSON string

// Raw returns a copy of the value that the caller owns, or nil when it is
// absent.
func (j JSON) Raw() json.RawMessage {
	if j == "" {
		return nil
	}
	return json.RawMessage(j)
}

// MarshalJSON encodes the value as it is recorded; an absent value is null.
func (j JSON) MarshalJSON() ([]byte, error) {
	if j == "" {
		return []byte("null"), nil
	}
	return []byte(j), nil
}

// shared is the JSON of recorded bytes, without a copy. It is sound because
// the bytes in a session's cache are never written once they are there:
// every value enters as a fresh copy in stored form (storedRaw, a load, an
// encode) and is replaced, never changed, when its row changes.
func shared(b json.RawMessage) JSON {
	if len(b) == 0 {
		return ""
	}
	return JSON(unsafe.String(unsafe.SliceData(b), len(b)))
}

// Steps is a run's recorded steps as a view hands them out, in index order.
// It shares the record, so handing it over costs nothing however long the
// run, and it cannot be written through: At returns a value of the caller's
// own, which stays as it was. The list itself shows the record as it is, so
// read it during the call it was handed to (the session changes a step's
// row in place); keep what At or Records returns.
type Steps struct{ s []Step }

// NewSteps is a Steps of copies of steps, for callers that build a view
// themselves (a test, a policy harness).
func NewSteps(steps ...Step) Steps { return Steps{copyAll(steps, copyStep)} }

// Len is the number of steps.
func (l Steps) Len() int { return len(l.s) }

// At returns step i. It allocates the step's decision, policy and
// observation, not their JSON, which is shared with the record.
func (l Steps) At(i int) StepView { return viewOf(&l.s[i]) }

// All yields every step with its position.
func (l Steps) All() iter.Seq2[int, StepView] {
	return func(yield func(int, StepView) bool) {
		for i := range l.s {
			if !yield(i, viewOf(&l.s[i])) {
				return
			}
		}
	}
}

// Records returns a copy of every step as the store holds it, JSON
// included: it costs the run's size.
func (l Steps) Records() []Step {
	if len(l.s) == 0 {
		return nil
	}
	return copyAll(l.s, copyStep)
}

// StepView is one recorded step as a view hands it out: the caller's own
// value, with the step's JSON in immutable form. Decision, Policy and
// Observation are nil when the step has none, as in Step.
type StepView struct {
	ID          string           `json:"id"`
	RunID       string           `json:"run_id"`
	Index       int              `json:"index"`
	Status      StepStatus       `json:"status"`
	Decision    *DecisionView    `json:"decision,omitempty"`
	Policy      *PolicyView      `json:"policy,omitempty"`
	Observation *ObservationView `json:"observation,omitempty"`
	StartedAt   time.Time        `json:"started_at"`
	FinishedAt  time.Time        `json:"finished_at,omitzero"`
	SpecHash    string           `json:"spec_hash,omitempty"`
	PolicyID    string           `json:"policy_id,omitempty"`
	DecodeError string           `json:"decode_error,omitempty"`
}

// DecisionView is a recorded Decision in immutable form.
type DecisionView struct {
	Kind          DecisionKind `json:"kind"`
	Tool          string       `json:"tool,omitempty"`
	Args          JSON         `json:"args,omitempty"`
	Reason        string       `json:"reason,omitempty"`
	Result        JSON         `json:"result,omitempty"`
	Message       string       `json:"message,omitempty"`
	InvalidArgs   string       `json:"invalid_args,omitempty"`
	InvalidResult string       `json:"invalid_result,omitempty"`
	InvalidBase64 bool         `json:"invalid_base64,omitempty"`
}

// PolicyView is a recorded PolicyDecision in immutable form.
type PolicyView struct {
	Outcome      PolicyOutcome `json:"outcome"`
	Reason       string        `json:"reason,omitempty"`
	Kind         string        `json:"kind,omitempty"`
	Capability   JSON          `json:"capability,omitempty"`
	Presentation JSON          `json:"presentation,omitempty"`
}

// ObservationView is a recorded Observation in immutable form.
type ObservationView struct {
	Kind        ObservationKind `json:"kind"`
	Content     JSON            `json:"content,omitempty"`
	Summary     string          `json:"summary,omitempty"`
	ContentHash string          `json:"content_hash,omitempty"`
	// Blocks are shared with the record: read them, never write them.
	Blocks         []ResultBlock `json:"blocks,omitempty"`
	FailureClass   FailureClass  `json:"failure_class,omitempty"`
	FailureMessage string        `json:"failure_message,omitempty"`
}

// Failure reports whether the observation counts as a failed step.
func (o ObservationView) Failure() bool { return o.Kind.Failure() }

func viewOf(st *Step) StepView {
	v := StepView{ID: st.ID, RunID: st.RunID, Index: st.Index, Status: st.Status, StartedAt: st.StartedAt,
		FinishedAt: st.FinishedAt, SpecHash: st.SpecHash, PolicyID: st.PolicyID, DecodeError: st.DecodeError}
	if st.Decision == nil && st.Policy == nil && st.Observation == nil {
		return v
	}
	box := new(struct {
		d DecisionView
		p PolicyView
		o ObservationView
	})
	if d := st.Decision; d != nil {
		box.d = DecisionView{Kind: d.Kind, Tool: d.Tool, Args: shared(d.Args), Reason: d.Reason, Result: shared(d.Result),
			Message: d.Message, InvalidArgs: d.InvalidArgs, InvalidResult: d.InvalidResult, InvalidBase64: d.InvalidBase64}
		v.Decision = &box.d
	}
	if p := st.Policy; p != nil {
		box.p = PolicyView{Outcome: p.Outcome, Reason: p.Reason, Kind: p.Kind, Capability: shared(p.Capability), Presentation: shared(p.Presentation)}
		v.Policy = &box.p
	}
	if o := st.Observation; o != nil {
		box.o = ObservationView{Kind: o.Kind, Content: shared(o.Content), Summary: o.Summary, ContentHash: o.ContentHash,
			Blocks: o.Blocks, FailureClass: o.FailureClass, FailureMessage: o.FailureMessage}
		v.Observation = &box.o
	}
	return v
}

// Step returns the step as the store holds it, with copies of its JSON.
func (v StepView) Step() Step {
	st := Step{ID: v.ID, RunID: v.RunID, Index: v.Index, Status: v.Status, StartedAt: v.StartedAt,
		FinishedAt: v.FinishedAt, SpecHash: v.SpecHash, PolicyID: v.PolicyID, DecodeError: v.DecodeError}
	if d := v.Decision; d != nil {
		st.Decision = &Decision{Kind: d.Kind, Tool: d.Tool, Args: d.Args.Raw(), Reason: d.Reason, Result: d.Result.Raw(),
			Message: d.Message, InvalidArgs: d.InvalidArgs, InvalidResult: d.InvalidResult, InvalidBase64: d.InvalidBase64}
	}
	if p := v.Policy; p != nil {
		st.Policy = &PolicyDecision{Outcome: p.Outcome, Reason: p.Reason, Kind: p.Kind, Capability: p.Capability.Raw(), Presentation: p.Presentation.Raw()}
	}
	if o := v.Observation; o != nil {
		st.Observation = &Observation{Kind: o.Kind, Content: o.Content.Raw(), Summary: o.Summary, ContentHash: o.ContentHash,
			FailureClass: o.FailureClass, FailureMessage: o.FailureMessage}
		if o.Blocks != nil {
			st.Observation.Blocks = append([]ResultBlock(nil), o.Blocks...)
		}
	}
	return st
}

// Approvals is a run's approvals as a view hands them out, in creation
// order. Like Steps, it shares the record and cannot be written through;
// approvals are small, so At returns a copy.
type Approvals struct{ a []Approval }

// NewApprovals is an Approvals of copies of as.
func NewApprovals(as ...Approval) Approvals { return Approvals{copyAll(as, copyApproval)} }

// Len is the number of approvals.
func (l Approvals) Len() int { return len(l.a) }

// At returns a copy of approval i.
func (l Approvals) At(i int) Approval { return copyApproval(l.a[i]) }

// All yields a copy of every approval with its position.
func (l Approvals) All() iter.Seq2[int, Approval] {
	return func(yield func(int, Approval) bool) {
		for i := range l.a {
			if !yield(i, copyApproval(l.a[i])) {
				return
			}
		}
	}
}

// Records returns a copy of every approval.
func (l Approvals) Records() []Approval {
	if len(l.a) == 0 {
		return nil
	}
	return copyAll(l.a, copyApproval)
}

func copyRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}

func copyRun(r Run) Run {
	r.Result = copyRaw(r.Result)
	return r
}

// copyStep is a deep copy of a step in two allocations: one for the
// decision, policy and observation structs, one for all their raw bytes
// (each cut with its capacity, so an append by a consumer cannot reach the
// next value), and one more for a tool result's blocks when it has any.
func copyStep(st Step) Step {
	if st.Decision == nil && st.Policy == nil && st.Observation == nil {
		return st
	}
	n := 0
	if d := st.Decision; d != nil {
		n += len(d.Args) + len(d.Result)
	}
	if p := st.Policy; p != nil {
		n += len(p.Capability) + len(p.Presentation)
	}
	if o := st.Observation; o != nil {
		n += len(o.Content)
	}
	buf := make([]byte, 0, n)
	raw := func(r json.RawMessage) json.RawMessage {
		if r == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, r...)
		return json.RawMessage(buf[start:len(buf):len(buf)])
	}
	box := new(struct {
		d Decision
		p PolicyDecision
		o Observation
	})
	if st.Decision != nil {
		box.d = *st.Decision
		box.d.Args, box.d.Result = raw(box.d.Args), raw(box.d.Result)
		st.Decision = &box.d
	}
	if st.Policy != nil {
		box.p = *st.Policy
		box.p.Capability, box.p.Presentation = raw(box.p.Capability), raw(box.p.Presentation)
		box.p.Requirement = copyRequirement(box.p.Requirement)
		st.Policy = &box.p
	}
	if st.Observation != nil {
		box.o = *st.Observation
		box.o.Content = raw(box.o.Content)
		box.o.Blocks = copyBlocks(box.o.Blocks)
		st.Observation = &box.o
	}
	return st
}

func copyPolicy(p PolicyDecision) PolicyDecision {
	p.Capability = copyRaw(p.Capability)
	p.Presentation = copyRaw(p.Presentation)
	p.Requirement = copyRequirement(p.Requirement)
	return p
}

func copyApproval(a Approval) Approval {
	a.Capability = copyRaw(a.Capability)
	a.Presentation = copyRaw(a.Presentation)
	a.Request = copyRequest(a.Request)
	a.Requirement = copyRequirement(a.Requirement)
	if a.Signature != nil {
		sig := *a.Signature
		sig.Signature = bytes.Clone(sig.Signature)
		sig.AuthenticatorData = bytes.Clone(sig.AuthenticatorData)
		sig.ClientDataJSON = bytes.Clone(sig.ClientDataJSON)
		a.Signature = &sig
	}
	return a
}

// copyBlocks is a deep copy of a tool result's blocks; nil stays nil, and
// a step without blocks costs no allocation.
func copyBlocks(in []ResultBlock) []ResultBlock {
	if in == nil {
		return nil
	}
	out := append([]ResultBlock(nil), in...)
	for i := range out {
		out[i].Data = bytes.Clone(out[i].Data)
	}
	return out
}

func copyRequest(r ToolRequest) ToolRequest {
	r.Spec = copySpec(r.Spec)
	r.Args = copyRaw(r.Args)
	r.Secrets = slices.Clone(r.Secrets)
	return r
}

// copyAll is a new slice holding copyOne of each of in's elements.
func copyAll[T any](in []T, copyOne func(T) T) []T {
	out := make([]T, len(in))
	for i := range in {
		out[i] = copyOne(in[i])
	}
	return out
}

// copyRequirement is a deep copy; nil stays nil.
func copyRequirement(r *Requirement) *Requirement {
	if r == nil {
		return nil
	}
	c := Requirement{Stages: make([]Stage, len(r.Stages))}
	for i, s := range r.Stages {
		s.Roles, s.Approvers, s.Exclude = slices.Clone(s.Roles), slices.Clone(s.Approvers), slices.Clone(s.Exclude)
		c.Stages[i] = s
	}
	return &c
}
