package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// GateConfig configures a Gate: the engine without an Agent, because the
// caller's own loop decides. Store and Policy are required; every other
// field means what it means in EngineConfig, zero included.
type GateConfig struct {
	EngineConfig
}

// Gate holds the runtime's bounds for a loop the runtime does not own. The
// caller proposes each decision; the gate records it, validates it, asks
// the policy, binds approvals, enforces the limits, holds the run's lease,
// and executes the tool itself. It runs the same session code as a Driver:
// there is one implementation of the step sequence, not two.
//
// There is deliberately no way for a caller to run a tool and report the
// outcome: that a request executes at most once is the runtime's claim, so
// the runtime makes the call.
type Gate struct {
	e *engine
}

// NewGate checks cfg as NewDriver checks a Config and registers its tools.
func NewGate(cfg GateConfig) (*Gate, error) {
	e, err := newEngine(cfg.EngineConfig)
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && strings.HasPrefix(ce.Field, "Config.") {
			return nil, &ConfigError{Field: "Gate" + ce.Field, Reason: ce.Reason}
		}
		return nil, err
	}
	return &Gate{e: e}, nil
}

// Begin creates a run with the caller's id, RUNNING under this gate's
// lease, and opens a session on it with no step.
func (g *Gate) Begin(ctx context.Context, runID, goal string, limits Limits) (*GateSession, error) {
	s, err := g.e.begin(ctx, runID, goal, limits)
	if err != nil {
		return nil, err
	}
	return &GateSession{s: s}, nil
}

// Attach does what Driver.Resume does before its loop, and hands the run
// to the caller:
//
//   - a zero Outcome, or VerdictDenied (an approved request the policy now
//     denies, recorded as the step's failure): the session is open with no
//     step, under this gate's lease;
//   - VerdictAllowed: an approved step is open (GateSession.Current) for
//     Execute, with Request a copy of the recorded request; the run still
//     waits, and Execute moves it to RUNNING as it starts the tool;
//   - VerdictPending or VerdictEnded: the run waits again or ended; the
//     session is already over.
//
// An error returns no session: ErrRunLeased when another owner's lease is
// live, ErrRunState when the run ended or waits on an approval not granted.
func (g *Gate) Attach(ctx context.Context, runID string) (*GateSession, Verdict, error) {
	s, v, err := g.e.attach(ctx, runID)
	if err != nil {
		return nil, v, err
	}
	gs := &GateSession{s: s}
	switch v.Outcome {
	case VerdictPending, VerdictEnded:
		gs.over = fmt.Errorf("%w: run %s is %s; the session is over", ErrRunState, runID, s.run.Status)
	case VerdictAllowed:
		gs.open = &OpenStep{gs: gs, st: s.cur, id: s.step(s.cur.idx).ID, index: s.step(s.cur.idx).Index}
	}
	return gs, v, nil
}

// GateSession is one hold on a run and its lease, for a caller's loop. Its
// lease is renewed while it is open. Calls are serialised; at most one step
// is open at a time.
//
// Once the session is over every call fails and starts nothing: with
// ErrRunState when the run paused or ended, ErrLeaseLost when the lease was
// lost or lapsed, and ErrSessionClosed (wrapping the cause) after Close or
// after a call failed. A call made out of turn (a second open step,
// Execute without an allowed verdict, a second Execute or decision) fails
// with ErrRunState and changes nothing.
type GateSession struct {
	mu   sync.Mutex
	s    *session
	open *OpenStep
	over error
}

// Session is the former name of GateSession, kept for one release so code
// written against it still compiles.
//
// Deprecated: use GateSession (an MCP session and a console session are
// other things).
type Session = GateSession

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

// Current returns the open step, or nil.
func (gs *GateSession) Current() *OpenStep {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.over != nil {
		return nil
	}
	return gs.open
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

// Step starts the next step, after the limits. A limit that ends the run,
// or a run an operator moved on, returns a nil step and a nil error, and
// the session is over.
func (gs *GateSession) Step(ctx context.Context) (*OpenStep, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if err := gs.usable(); err != nil {
		return nil, err
	}
	if gs.open != nil {
		return nil, fmt.Errorf("%w: step %d is still open", ErrRunState, gs.open.index)
	}
	i, err := gs.s.begin(ctx)
	if err := gs.after(err); err != nil {
		return nil, err
	}
	if i < 0 {
		return nil, nil
	}
	st := gs.s.step(i)
	gs.open = &OpenStep{gs: gs, st: gs.s.cur, id: st.ID, index: st.Index}
	return gs.open, nil
}

// Input returns what an Agent would be handed now, as copies: with a step
// open, its StepInput (Model included when configured); between steps, the
// run as the session left it with every recorded step. It reads no clock,
// and the store at most once per session.
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
	if gs.open != nil {
		in = gs.s.input(gs.s.run, gs.open.st.idx)
		in.Model = gs.open.model()
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

// after classifies what a call into the session returned, ending the
// session when the call ended it, and returns the error the caller sees.
func (gs *GateSession) after(err error) error {
	s := gs.s
	if s.cur == nil {
		gs.open = nil
	}
	waitingGrant := s.cur != nil && s.cur.allowed != nil && s.cur.allowed.resumed && !s.cur.executed
	switch {
	case err != nil && errors.Is(err, ErrLeaseLost):
		gs.end(ErrLeaseLost)
	case s.run.Status != RunRunning && !waitingGrant:
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
	gs.open = nil
	gs.s.close()
}

// OpenStep is the step a session is working on.
type OpenStep struct {
	gs    *GateSession
	st    *openStep
	id    string
	index int
}

// ID is the step's id.
func (o *OpenStep) ID() string { return o.id }

// Index is the step's position in the run, from 0.
func (o *OpenStep) Index() int { return o.index }

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
	if o.gs.open != o || o.gs.s.cur != o.st {
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
//   - VerdictPending: the run waits on Approval; the session is over.
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
		return Verdict{}, o.gs.after(err)
	}
	v, err := o.gs.s.propose(ctx, d)
	return v, o.gs.after(err)
}

// Execute runs the allowed request, exactly as recorded, whatever the
// caller did to the verdict it was shown. The tool start is durable before
// the tool runs, and the outcome is recorded even if ctx is cancelled. An
// approved step's grant is judged against Limits.GrantTTL again, on a fresh
// clock reading: a grant that expired while the caller held it cancels the
// run as approval_expired, runs nothing, and returns an error matching
// ErrApprovalExpired.
func (o *OpenStep) Execute(ctx context.Context) (Observation, error) {
	o.gs.mu.Lock()
	defer o.gs.mu.Unlock()
	if err := o.check(); err != nil {
		return Observation{}, err
	}
	if o.st.allowed == nil || o.st.executed {
		return Observation{}, fmt.Errorf("%w: step %d has no allowed request awaiting execution", ErrRunState, o.index)
	}
	obs, err := o.gs.s.execute(ctx)
	if err == nil && obs.Kind == "" {
		// An operator moved the run on before the tool started.
		err = fmt.Errorf("%w: run %s is %s; nothing was executed", ErrRunState, o.gs.s.runID, o.gs.s.run.Status)
	}
	return obs, o.gs.after(err)
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
		return Verdict{}, o.gs.after(ErrLeaseLost)
	}
	ferr := o.gs.s.agentFailed(ctx, err)
	if errors.Is(ferr, errEnded) {
		ferr = nil
	}
	if ferr = o.gs.after(ferr); ferr != nil {
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
		o := m.o
		o.gs.after(err)
	}
	return resp, err
}
