package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// GateSession is one hold on a run and its lease, for a caller's loop. Its
// lease is renewed while it is open.
//
// Several steps may be open at once, each from its own Step call, and
// their calls may come from several goroutines: a framework's turn with
// parallel tool calls. The store gives the record one total order. A
// step's own writes (its decision, its tool start, its outcome) commit
// without the session's lock, so siblings' writes share the store's group
// commits; each step's writes stay in their causal order, and everything
// else (opening a step, a pause, the run's end) is made under the lock. A
// tool runs outside the lock too, so siblings' tools run side by side. A step whose request needs approval while siblings are in
// flight waits alone: the run stays RUNNING, and moves to
// WAITING_FOR_APPROVAL (run.waiting) when no step is in flight any more,
// which ends the session. A lone step's pending verdict ends it at once.
//
// Once the session is over every call fails and starts nothing: with
// ErrRunState when the run paused or ended, ErrLeaseLost when the lease was
// lost or lapsed, and ErrSessionClosed (wrapping the cause) after Close or
// after a call failed. A call made out of turn (Execute without an allowed
// verdict, a second Execute or decision) fails with ErrRunState and changes
// nothing.
type GateSession struct {
	mu   sync.Mutex
	s    *session
	open []*OpenStep // steps not yet ended, in the order they opened
	over error
}

// newGateSession wraps s: a step's own writes release the session's lock
// while they commit (session.writeOut), so siblings share commits.
func newGateSession(s *session) *GateSession {
	gs := &GateSession{s: s}
	s.mu = &gs.mu
	s.relocked = func() { s.siblings = len(gs.open)+s.beginning > 1 }
	return gs
}

// Run returns a copy of the run as the session last read or wrote it.
func (gs *GateSession) Run() Run {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return copyRun(gs.s.run)
}

// Done reports whether the session is over.
func (gs *GateSession) Done() bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.over != nil
}

// Current returns the latest open step, or nil.
func (gs *GateSession) Current() *OpenStep {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.over != nil || len(gs.open) == 0 {
		return nil
	}
	return gs.open[len(gs.open)-1]
}

// StepByCallID finds the step whose decision carries callID
// (Decision.CallID): an open step as Step or Attach returned it, or else
// the latest recorded step of the run with that id, as a handle that is no
// longer open (its Step method reads the record; other calls fail with
// ErrRunState). It reports false when no step has the id.
func (gs *GateSession) StepByCallID(callID string) (*OpenStep, bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if callID == "" {
		return nil, false
	}
	for _, o := range gs.open {
		if d := gs.s.steps[o.st.idx].Decision; d != nil && d.CallID == callID {
			return o, true
		}
	}
	if gs.s.load(context.Background()) != nil {
		return nil, false
	}
	for i := len(gs.s.steps) - 1; i >= 0; i-- {
		st := &gs.s.steps[i]
		if st.Decision != nil && st.Decision.CallID == callID {
			return &OpenStep{gs: gs, st: &openStep{idx: i, decided: true}, id: st.ID, index: st.Index, ended: true}, true
		}
	}
	return nil, false
}

// Close ends the session. The heartbeat stops and the lease is released,
// so another process may take the run at once; an open step is left as a
// crash would leave it: an allowed step that never started runs nothing,
// and an approved step from Attach stays approved for the next Attach.
func (gs *GateSession) Close() {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.end(ErrSessionClosed)
}

// Step starts the next step, after the limits. Steps already open stay
// open. A limit that ends the run, or a run an operator moved on, returns a
// nil step and a nil error, and the session is over.
func (gs *GateSession) Step(ctx context.Context) (*OpenStep, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if err := gs.usable(); err != nil {
		return nil, err
	}
	if gs.waitsOnGrant() {
		return nil, fmt.Errorf("%w: the approved step %d must be executed first", ErrRunState, gs.open[0].index)
	}
	i, err := gs.s.begin(ctx)
	var o *OpenStep
	if i >= 0 {
		st := new(openStep)
		*st = *gs.s.cur
		gs.s.cur = nil
		if gs.over != nil {
			// The session ended while the step's start committed
			// without the lock: it is left as a crash would leave it.
			return nil, gs.over
		}
		o = &OpenStep{gs: gs, st: st, id: gs.s.step(i).ID, index: gs.s.step(i).Index}
		gs.open = append(gs.open, o)
	}
	if err := gs.after(ctx, err); err != nil {
		return nil, err
	}
	return o, nil
}

// Complete ends the run COMPLETED with result (empty means {}) without
// opening a step: a framework's loop that finished on its own. It is
// refused while a step is open, and result that is not acceptable JSON is
// refused before anything is written.
func (gs *GateSession) Complete(ctx context.Context, result json.RawMessage) error {
	if len(result) == 0 {
		result = json.RawMessage("{}")
	}
	if err := checkJSONAs("result", result); err != nil {
		return err
	}
	return gs.settleRun(ctx, ending{status: RunCompleted, reason: ReasonGoalCompleted, result: copyRaw(result)})
}

// Fail ends the run FAILED without opening a step, for err: a
// *LimitError or *ModelUnavailableError names its reason, anything else is
// agent_error. It is refused while a step is open.
func (gs *GateSession) Fail(ctx context.Context, err error) error {
	if err == nil {
		return fmt.Errorf("%w: Fail needs the error that ended the run", ErrRunState)
	}
	return gs.settleRun(ctx, failedEnding(err))
}

func (gs *GateSession) settleRun(ctx context.Context, end ending) error {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if err := gs.usable(); err != nil {
		return err
	}
	if n := len(gs.open) + gs.s.beginning; n > 0 {
		return fmt.Errorf("%w: %d step(s) are still open", ErrRunState, n)
	}
	if gs.s.lease.isLost() {
		return gs.after(ctx, ErrLeaseLost)
	}
	return gs.after(ctx, gs.s.settle(ctx, end))
}

// Input returns what an Agent would be handed now, as copies: with a step
// open, the latest one's StepInput (Model included when configured);
// between steps, the run as the session left it with every recorded step.
// It reads no clock, and the store at most once per session.
func (gs *GateSession) Input(ctx context.Context) (StepInput, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if err := gs.usable(); err != nil {
		return StepInput{}, err
	}
	if err := gs.s.load(ctx); err != nil {
		return StepInput{}, err
	}
	var in StepInput
	if n := len(gs.open); n > 0 {
		o := gs.open[n-1]
		in = gs.s.input(gs.s.run, o.st.idx)
		in.Model = o.model()
	} else {
		in = gs.s.input(gs.s.run, len(gs.s.steps))
	}
	// A gate's caller may keep an answer while it goes on: each holds its
	// own list of the rows, which the session changes by replacing what
	// they point to, so a kept answer stays as it was. The JSON is shared
	// (immutable).
	in.Steps = Steps{append([]Step(nil), in.Steps.s...)}
	in.Approvals = Approvals{append([]Approval(nil), in.Approvals.a...)}
	tools := make([]ToolSpec, len(in.Tools))
	for i := range in.Tools {
		tools[i] = copySpec(in.Tools[i])
	}
	in.Tools = tools
	return in, nil
}

// usable says why no call may be made, or nil.
func (gs *GateSession) usable() error {
	if gs.over != nil {
		return gs.over
	}
	return nil
}

// waitsOnGrant reports whether the session holds an approved step from
// Attach that has not started: the run still waits until it does.
func (gs *GateSession) waitsOnGrant() bool {
	for _, o := range gs.open {
		if a := o.st.allowed; a != nil && a.resumed && !o.st.executed {
			return true
		}
	}
	return false
}

// on runs fn on step o: the session's open step is o for its duration, and
// the others count as o's siblings. A step fn ended leaves the open list.
func (gs *GateSession) on(ctx context.Context, o *OpenStep, fn func() error) error {
	s := gs.s
	s.cur = o.st
	s.siblings = len(gs.open)+s.beginning > 1
	err := fn()
	if s.cur == nil {
		o.ended = true
		gs.open = slices.DeleteFunc(gs.open, func(x *OpenStep) bool { return x == o })
	}
	s.cur, s.siblings = nil, false
	return gs.after(ctx, err)
}

// after classifies what a call into the session returned, ending the
// session when the call ended it, and returns the error the caller sees.
// A RUNNING run with nothing in flight and a step awaiting approval moves
// to WAITING here (waitIdle).
func (gs *GateSession) after(ctx context.Context, err error) error {
	s := gs.s
	if err == nil && len(gs.open) == 0 && s.beginning == 0 && !s.closed {
		err = s.waitIdle(context.WithoutCancel(ctx))
	}
	switch {
	case err != nil && errors.Is(err, ErrLeaseLost):
		gs.end(ErrLeaseLost)
	case s.run.Status != RunRunning && !gs.waitsOnGrant():
		gs.end(fmt.Errorf("%w: run %s is %s; the session is over", ErrRunState, s.runID, s.run.Status))
	case err != nil:
		gs.end(fmt.Errorf("%w: %w", ErrSessionClosed, err))
	}
	return err
}

// end makes the session over for why, releasing what it holds.
func (gs *GateSession) end(why error) {
	if gs.over == nil {
		gs.over = why
	}
	for _, o := range gs.open {
		o.ended = true
	}
	gs.open = nil
	gs.s.close()
}
