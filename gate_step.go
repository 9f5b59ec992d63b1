package agentrt

import (
	"context"
	"errors"
	"fmt"
)

// OpenStep is a step a session is working on.
type OpenStep struct {
	gs    *GateSession
	st    *openStep
	id    string
	index int
	ended bool // the step left the session: decided and ended, or the session is over
}

// ID is the step's id.
func (o *OpenStep) ID() string { return o.id }

// Index is the step's position in the run, from 0.
func (o *OpenStep) Index() int { return o.index }

// Step returns a copy of the step as the session last wrote or read it.
func (o *OpenStep) Step() Step {
	o.gs.mu.Lock()
	defer o.gs.mu.Unlock()
	return copyStep(o.gs.s.steps[o.st.idx])
}

// Model returns the accounted, limited handle to the configured model for
// this step: nil without GateConfig.Model, and nil for an approved step
// from Attach, which has been decided.
func (o *OpenStep) Model() ModelCaller {
	o.gs.mu.Lock()
	defer o.gs.mu.Unlock()
	return o.model()
}

func (o *OpenStep) model() ModelCaller {
	if o.gs.s.e.model == nil || o.st.decided {
		return nil
	}
	return &gateModel{o: o, inner: o.gs.s.caller(o.st.idx)}
}

// check refuses a call on a session that is over or a step that is no
// longer open.
func (o *OpenStep) check() error {
	if err := o.gs.usable(); err != nil {
		return err
	}
	if o.ended {
		return fmt.Errorf("%w: step %d is no longer open", ErrRunState, o.index)
	}
	return nil
}

// Propose hands the gate the caller's decision for this step. The decision
// is recorded before anything judges it; then it is validated and, for a
// tool call, judged by the policy. The lease is checked first, since a
// caller may have taken any time to decide.
//
//   - VerdictAllowed: Request is a copy of what Execute will run.
//   - VerdictDenied: an invalid decision or a policy deny, recorded as the
//     step's failure in Observation; the session goes on.
//   - VerdictPending: the step waits on Approval. With no sibling step in
//     flight the run waits and the session is over; otherwise the run goes
//     on RUNNING for the siblings and waits when they are done.
//   - VerdictEnded: the run ended (complete, fail, abort); the session is over.
func (o *OpenStep) Propose(ctx context.Context, d Decision) (Verdict, error) {
	o.gs.mu.Lock()
	defer o.gs.mu.Unlock()
	if err := o.check(); err != nil {
		return Verdict{}, err
	}
	if o.st.decided {
		return Verdict{}, fmt.Errorf("%w: step %d is already decided", ErrRunState, o.index)
	}
	if err := o.gs.s.requireLive(); err != nil {
		return Verdict{}, o.gs.after(ctx, err)
	}
	var v Verdict
	err := o.gs.on(ctx, o, func() error {
		var err error
		v, err = o.gs.s.propose(ctx, d)
		return err
	})
	if v.Outcome != "" && v.Outcome != VerdictEnded && v.Run.ID != "" {
		// The verdict shows the run as it is after the call, a pause that
		// waited for siblings included.
		v.Run = copyRun(o.gs.s.run)
	}
	return v, err
}

// Execute runs the allowed request, exactly as recorded, whatever the
// caller did to the verdict it was shown. The tool start is durable before
// the tool runs, and the outcome is recorded even if ctx is cancelled. An
// approved step's grant is judged against Limits.GrantTTL again, on a fresh
// clock reading: a grant that expired while the caller held it cancels the
// run as approval_expired, runs nothing, and returns an error matching
// ErrApprovalExpired. A tool registered by spec only is refused with
// ErrNoToolBody before anything is written: use ExecuteFunc.
//
// The tool runs outside the session's order of writes: sibling steps may
// be proposed and executed meanwhile.
func (o *OpenStep) Execute(ctx context.Context) (Observation, error) {
	return o.execute(ctx, nil)
}

// ExecuteFunc is Execute for a tool registered by spec only (SpecOnly):
// body is called at most once, after the tool start is durable, with a
// copy of the recorded arguments (whatever the caller was shown), and what
// it returns is recorded as the tool's outcome (an error as a tool error,
// content that is not acceptable JSON as a tool error, a panic as a tool
// error). A crash while body runs leaves the step executing, which the
// next Attach marks interrupted and, the tool not being read-only, puts
// before an operator: body is never silently called again. A Worker
// cannot resume such a step by itself, since it has no body to call.
// ExecuteFunc on a tool with a registered body is refused with
// ErrNoToolBody before anything is written.
func (o *OpenStep) ExecuteFunc(ctx context.Context, body ToolBody) (Observation, error) {
	if body == nil {
		return Observation{}, fmt.Errorf("%w: ExecuteFunc needs a body", ErrNoToolBody)
	}
	return o.execute(ctx, body)
}

func (o *OpenStep) execute(ctx context.Context, body ToolBody) (Observation, error) {
	gs := o.gs
	gs.mu.Lock()
	if err := o.check(); err != nil {
		gs.mu.Unlock()
		return Observation{}, err
	}
	ac := o.st.allowed
	if ac == nil || (o.st.executed && o.st.started == nil) {
		gs.mu.Unlock()
		return Observation{}, fmt.Errorf("%w: step %d has no allowed request awaiting execution", ErrRunState, o.index)
	}
	if ac.tool.specOnly != (body != nil) {
		gs.mu.Unlock()
		if body == nil {
			return Observation{}, fmt.Errorf("%w: %q is registered by spec only; call ExecuteFunc", ErrNoToolBody, ac.tool.spec.Name)
		}
		return Observation{}, fmt.Errorf("%w: %q has a registered body; call Execute", ErrNoToolBody, ac.tool.spec.Name)
	}
	if x := o.st.started; x != nil {
		return o.runStarted(ctx, body, *x)
	}
	var x toolRun
	err := gs.on(ctx, o, func() error {
		var err error
		x, err = gs.s.startTool(ctx)
		if err == nil && x.ac == nil {
			// An operator moved the run on before the tool started.
			err = fmt.Errorf("%w: run %s is %s; nothing was executed", ErrRunState, gs.s.runID, gs.s.run.Status)
		}
		return err
	})
	gs.mu.Unlock()
	if err != nil {
		return Observation{}, err
	}
	return o.runBody(ctx, body, x)
}

// runStarted runs the tool whose start GateSession.Propose committed
// with the step's opening (gs.mu held, released here), after the last
// lease check before the side effect. A session closed or a lease lost
// meanwhile leaves the start recorded, as a crash would, and runs nothing.
func (o *OpenStep) runStarted(ctx context.Context, body ToolBody, x toolRun) (Observation, error) {
	gs := o.gs
	o.st.started = nil
	err := gs.s.requireLive()
	if gs.s.closed {
		err = ErrSessionClosed
	}
	if err != nil {
		err = gs.on(ctx, o, func() error { return err })
		gs.mu.Unlock()
		return Observation{}, err
	}
	gs.mu.Unlock()
	return o.runBody(ctx, body, x)
}

// runBody calls the tool of x, whose start is durable, and records its
// outcome.
func (o *OpenStep) runBody(ctx context.Context, body ToolBody, x toolRun) (Observation, error) {
	gs := o.gs
	res, callErr, timedOut := gs.s.callTool(ctx, x.ac, x.stepID, body)
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var obs Observation
	err := gs.on(ctx, o, func() error {
		var err error
		obs, err = gs.s.endTool(ctx, x, res, callErr, timedOut)
		return err
	})
	return obs, err
}

// Fail ends the run because the caller could not decide this step: err is
// why (a *LimitError or *ModelUnavailableError from Model names the reason;
// anything else is agent_error). It is refused once the step is decided.
func (o *OpenStep) Fail(ctx context.Context, err error) (Verdict, error) {
	o.gs.mu.Lock()
	defer o.gs.mu.Unlock()
	if err := o.check(); err != nil {
		return Verdict{}, err
	}
	if err == nil {
		return Verdict{}, fmt.Errorf("%w: Fail needs the error that ended step %d", ErrRunState, o.index)
	}
	if o.st.decided {
		return Verdict{}, fmt.Errorf("%w: step %d is already decided", ErrRunState, o.index)
	}
	if errors.Is(err, ErrLeaseLost) || o.gs.s.lease.isLost() {
		// As in the Driver's loop: a session that lost the run does not
		// end it.
		return Verdict{}, o.gs.after(ctx, ErrLeaseLost)
	}
	ferr := o.gs.on(ctx, o, func() error {
		ferr := o.gs.s.agentFailed(ctx, err)
		if errors.Is(ferr, errEnded) {
			ferr = nil
		}
		return ferr
	})
	if ferr != nil {
		return Verdict{}, ferr
	}
	return Verdict{Outcome: VerdictEnded, Run: copyRun(o.gs.s.run)}, nil
}

// gateModel serialises a step's model calls with the session's other calls
// and refuses them once the step is decided or the session is over.
type gateModel struct {
	o     *OpenStep
	inner ModelCaller
}

func (m *gateModel) Generate(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	m.o.gs.mu.Lock()
	defer m.o.gs.mu.Unlock()
	if err := m.o.check(); err != nil {
		return ModelResponse{}, err
	}
	if m.o.st.decided {
		return ModelResponse{}, fmt.Errorf("%w: step %d is already decided", ErrRunState, m.o.index)
	}
	resp, err := m.inner.Generate(ctx, req)
	if errors.Is(err, ErrLeaseLost) {
		m.o.gs.after(ctx, err)
	}
	return resp, err
}
