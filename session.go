package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// session is one hold on a run and its lease: the single implementation of
// the step sequence that the Driver's loop and a Gate's caller both use.
type session struct {
	e     *engine
	runID string
	lease *lease

	run       Run // as of the last read or write
	steps     []Step
	approvals []Approval
	loaded    bool

	// the open step, if any
	cur    *openStep
	closed bool
}

// openStep is the step the session is working on.
type openStep struct {
	idx      int // position in s.steps
	decided  bool
	allowed  *allowedCall
	executed bool
}

// allowedCall is a request the policy allowed (or a grant covers), waiting to
// be executed.
type allowedCall struct {
	tool     *regTool
	request  ToolRequest // as handed to the tool
	policy   PolicyDecision
	specHash string
	approval *Approval // the grant, on resume
	resumed  bool      // the run is WAITING and execute moves it to RUNNING
}

// write commits fn, delivers its events after the commit, and returns the
// error fn or the commit returned.
func (s *session) write(ctx context.Context, fn func(tx Tx) error) error {
	evs, err := s.e.store.Update(ctx, fn)
	if err != nil {
		return err
	}
	s.e.deliver(evs)
	return nil
}

// event appends one event with a JSON payload built from v.
func event(tx Tx, runID, stepID string, at time.Time, typ EventType, v any) error {
	var payload []byte
	switch p := v.(type) {
	case nil:
		payload = []byte("{}")
	case json.RawMessage:
		payload = p
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return &JSONError{What: string(typ) + " event", Reason: "will not encode: " + err.Error()}
		}
		payload = b
	}
	_, err := tx.EventAppend(Event{RunID: runID, StepID: stepID, At: at, Type: typ, Payload: payload})
	return err
}

// guard re-reads the run inside tx and requires it RUNNING under this
// session's lease, renewing the lease with the same statement. It returns
// the run as read.
func (s *session) guard(tx Tx, extra RunUpdate) (Run, error) {
	run, err := tx.RunGet(s.runID)
	if err != nil {
		return run, err
	}
	if run.Status != RunRunning {
		return run, fmt.Errorf("%w: run %s is %s", ErrRunState, s.runID, run.Status)
	}
	if run.LeaseOwner != s.lease.owner || run.Generation != s.lease.generation() {
		s.lease.markLost()
		return run, ErrLeaseLost
	}
	exp := s.lease.expiry()
	extra.ID = s.runID
	extra.From = []RunStatus{RunRunning}
	extra.CheckLease = true
	extra.Owner = s.lease.owner
	extra.Generation = run.Generation
	if extra.Status == "" || extra.Status == RunRunning {
		extra.SetLease = true
		extra.LeaseOwner = s.lease.owner
		extra.LeaseExpiresAt = exp
	}
	if err := tx.RunUpdate(extra); err != nil {
		return run, err
	}
	if extra.SetLease {
		run.LeaseExpiresAt = exp
	}
	return run, nil
}

// requireLive refuses to start a side effect unless the lease is held and
// unexpired by the wall clock.
func (s *session) requireLive() error {
	if !s.lease.ok() {
		s.lease.markLost()
		return ErrLeaseLost
	}
	return nil
}

// begin creates a run RUNNING under this engine's lease.
func (e *engine) begin(ctx context.Context, id, goal string, limits Limits) (*session, error) {
	if id == "" {
		return nil, &ConfigError{Field: "run id", Reason: "must not be empty"}
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if err := e.claim(id); err != nil {
		return nil, err
	}
	s := &session{e: e, runID: id, lease: newLease(e, id), loaded: true}
	now := e.now()
	exp := s.lease.expiry()
	run := Run{ID: id, Goal: goal, Status: RunRunning, Limits: limits, CreatedAt: now, StartedAt: now,
		LeaseOwner: e.owner, LeaseExpiresAt: exp, Generation: 1}
	err := s.write(ctx, func(tx Tx) error {
		if err := tx.RunInsert(run); err != nil {
			return err
		}
		if err := event(tx, id, "", now, EventRunCreated, struct {
			Goal   string          `json:"goal"`
			Limits Limits          `json:"limits"`
			Tools  json.RawMessage `json:"tools"`
		}{goal, limits, e.toolList}); err != nil {
			return err
		}
		for _, t := range e.tools {
			if err := tx.SpecPut(t.hash, t.canonical); err != nil {
				return err
			}
		}
		return event(tx, id, "", now, EventRunStarted, nil)
	})
	if err != nil {
		e.unclaim(id)
		return nil, err
	}
	s.run = run
	s.lease.held(1, exp)
	s.lease.start()
	return s, nil
}

// close ends the session: the heartbeat stops and a lease still held is
// released, leaving any open step as a crash would leave it. The release is
// a compare-and-set on this owner and generation, so it is attempted even
// when the lease is believed lost: a lease that merely lapsed, with nobody
// taking the run, is freed rather than left to block a resume for a TTL,
// and one another owner took is not touched.
func (s *session) close() {
	if s.closed {
		return
	}
	s.closed = true
	s.lease.halt()
	// A pause or an end released the lease in its own transaction.
	if s.lease.generation() > 0 && s.run.Status == RunRunning {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = s.e.store.Update(ctx, func(tx Tx) error {
			return tx.RunUpdate(RunUpdate{ID: s.runID, From: []RunStatus{RunRunning}, CheckLease: true,
				Owner: s.lease.owner, Generation: s.lease.generation(), SetLease: true})
		})
		cancel()
	}
	s.e.unclaim(s.runID)
}

// load reads the run's steps and approvals once per session.
func (s *session) load(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	steps, err := s.e.store.ListSteps(ctx, s.runID)
	if err != nil {
		return err
	}
	apps, err := s.e.store.ListApprovals(ctx, s.runID)
	if err != nil {
		return err
	}
	s.steps, s.approvals, s.loaded = steps, apps, true
	return nil
}

// damaged names the first row of the run that did not decode.
func (s *session) damaged() string {
	if s.run.DecodeError != "" {
		return "run: " + s.run.DecodeError
	}
	for _, st := range s.steps {
		if st.DecodeError != "" {
			return fmt.Sprintf("step %d: %s", st.Index, st.DecodeError)
		}
	}
	for _, a := range s.approvals {
		if a.DecodeError != "" {
			return fmt.Sprintf("approval %s: %s", a.ID, a.DecodeError)
		}
	}
	return ""
}

// refresh reads the run row: model calls and operators change it.
func (s *session) refresh(ctx context.Context) (Run, error) {
	run, err := s.e.store.GetRun(ctx, s.runID)
	if err != nil {
		return s.run, err
	}
	s.run = run
	return run, nil
}

// stepAt returns the cached step at position i.
func (s *session) step(i int) *Step { return &s.steps[i] }

// view builds a policy's or reconciler's copy of the run before step index
// upto (-1: all steps).
func (s *session) view(run Run, upto int) RunView {
	v := RunView{Run: copyRun(run)}
	n := len(s.steps)
	if upto >= 0 && upto < n {
		n = upto
	}
	if n > 0 {
		v.Steps = copySteps(s.steps[:n])
	}
	if len(s.approvals) > 0 {
		v.Approvals = copyApprovals(s.approvals)
	}
	return v
}

// input builds an agent's copy of the run for the step at position i.
func (s *session) input(run Run, i int) StepInput {
	in := StepInput{Run: copyRun(run), Tools: make([]ToolSpec, len(s.e.specs))}
	if i > 0 {
		in.Steps = copySteps(s.steps[:i])
	}
	if len(s.approvals) > 0 {
		in.Approvals = copyApprovals(s.approvals)
	}
	for j, sp := range s.e.specs {
		in.Tools[j] = copySpec(sp)
	}
	return in
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

func copyStep(st Step) Step {
	if st.Decision != nil {
		d := *st.Decision
		d.Args = copyRaw(d.Args)
		d.Result = copyRaw(d.Result)
		st.Decision = &d
	}
	if st.Policy != nil {
		p := copyPolicy(*st.Policy)
		st.Policy = &p
	}
	if st.Observation != nil {
		o := *st.Observation
		o.Content = copyRaw(o.Content)
		st.Observation = &o
	}
	return st
}

func copyPolicy(p PolicyDecision) PolicyDecision {
	p.Capability = copyRaw(p.Capability)
	p.Presentation = copyRaw(p.Presentation)
	return p
}

func copySteps(in []Step) []Step {
	out := make([]Step, len(in))
	for i := range in {
		out[i] = copyStep(in[i])
	}
	return out
}

func copyApproval(a Approval) Approval {
	a.Capability = copyRaw(a.Capability)
	a.Presentation = copyRaw(a.Presentation)
	a.Request = copyRequest(a.Request)
	return a
}

func copyRequest(r ToolRequest) ToolRequest {
	r.Spec = copySpec(r.Spec)
	r.Args = copyRaw(r.Args)
	return r
}

func copyApprovals(in []Approval) []Approval {
	out := make([]Approval, len(in))
	for i := range in {
		out[i] = copyApproval(in[i])
	}
	return out
}

// stored returns v as a fresh load of its stored JSON would: the cache holds
// exactly what the store holds.
func stored[T any](v *T) (*T, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &JSONError{What: "record", Reason: "will not encode: " + err.Error()}
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// errEnded marks a session that is over because the run paused or ended.
var errEnded = errors.New("agentrt: session is over")
