package agentrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
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
	// recordedLimits are the limits the run's run.created event holds, read
	// when a grant is resumed (checkRunRecord); nil until then.
	recordedLimits *Limits

	argsHashes []string // per step, the arguments' content hash (loop detection)
	agentTools []ToolSpec
	// deferred is a step end the Driver's loop commits with the next write;
	// deferEnds is set by the Driver's loop (a Gate records each end at once).
	deferred      *deferredEnd
	deferEnds     bool
	pendingActive time.Duration // a deferred end's duration, added by the guard of the write it joins

	// siblings is set by a gate while other steps of its session are in
	// flight: a pause then leaves the run RUNNING (pause, waitIdle).
	siblings bool
	// mu is a gate session's lock, held by every call into the session;
	// writeOut releases it while a step's own write commits, and then calls
	// relocked (which counts the siblings again). Nil in the Driver's loop.
	mu       *sync.Mutex
	relocked func()
	// beginning counts a gate's steps being opened without its lock held
	// (beginQueued): they are siblings in flight.
	beginning int

	// the open step, if any (in the Driver's loop, &curBuf)
	cur    *openStep
	curBuf openStep
	closed bool
	// held is the run's creation, not yet written (beginHeld): the
	// session's first write commits it first (heldWrite).
	held    func(ctx context.Context, tx Tx) error
	created *Run // the run as held wrote it
}

// openStep is the step the session is working on.
type openStep struct {
	idx        int // position in s.steps
	decided    bool
	allowed    *allowedCall
	allowedBuf allowedCall
	executed   bool
	// started is the tool run whose start committed with the step's
	// opening (GateSession.Propose): Execute only runs it.
	started *toolRun
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

// deferredEnd is a tool step's end that the Driver's loop commits in the
// same transaction as its next write (the next step's start, or the run's
// end), saving a synced commit per step. Nothing runs between the tool's
// return and that write but reads, so no side effect can slip in between;
// a crash there leaves the step executing, which a takeover treats as an
// interrupted side effect.
type deferredEnd struct {
	// fn writes the step end; the write it joins guards the run (and adds
	// active, the step's duration, to the run with the same statement).
	fn     func(tx Tx) error
	active time.Duration
	index  int                             // the step's index, for the crash point once it is durable
	late   func(ctx context.Context) error // records the outcome after a cancel
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
	s, err := e.beginHeld(ctx, id, goal, limits)
	if err != nil {
		return nil, err
	}
	// The creation commits alone; a failed one closed the session.
	if err := s.write(ctx, func(Tx) error { return nil }); err != nil {
		return nil, err
	}
	return s, nil
}

// beginHeld makes the session of a new run whose creation is not yet
// written: s.held records it, and the session's first write commits it
// first, in the same transaction (heldWrite). The lease's heartbeat starts
// once it is committed. ctx's trace context is recorded in run.created.
func (e *engine) beginHeld(ctx context.Context, id, goal string, limits Limits) (*session, error) {
	if id == "" {
		return nil, &ConfigError{Field: "run id", Reason: "must not be empty"}
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	tc, err := traceContextOf(ctx)
	if err != nil {
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
	s.run = run
	s.lease.held(1, exp)
	var created Run
	s.created = &created
	s.held = func(ctx context.Context, tx Tx) error {
		if c, ok := tx.(DatabaseClock); ok {
			at, err := c.DatabaseNow(ctx)
			if err != nil {
				return err
			}
			run.LeaseExpiresAt = at.Add(s.lease.ttl)
		}
		created = run
		if err := tx.RunInsert(run); err != nil {
			return err
		}
		if err := event(tx, id, "", now, EventRunCreated, RunCreatedPayload{Goal: goal, Limits: limits, Tools: e.toolList, Disclosure: e.described, Trace: tc}); err != nil {
			return err
		}
		for _, t := range e.tools {
			if err := tx.SpecPut(t.hash, t.canonical); err != nil {
				return err
			}
		}
		return event(tx, id, "", now, EventRunStarted, RunStartedPayload{})
	}
	return s, nil
}

// heldWrite returns fn preceded by the run's creation when it is not yet
// written (beginHeld), and the function to call with the commit's error:
// once the creation committed, the lease's heartbeat starts.
func (s *session) heldWrite(ctx context.Context, fn func(tx Tx) error) (func(tx Tx) error, func(error)) {
	held := s.held
	if held == nil {
		return fn, func(error) {}
	}
	s.held = nil
	return func(tx Tx) error {
			if err := held(ctx, tx); err != nil {
				return err
			}
			return fn(tx)
		}, func(err error) {
			if err != nil {
				// Nothing was written: the run does not exist, and the
				// session cannot go on.
				s.closed = true
				s.lease.halt()
				s.e.unclaim(s.runID)
				return
			}
			// The database's clock may have set the lease's expiry.
			s.run.LeaseExpiresAt = s.created.LeaseExpiresAt
			s.created = nil
			s.lease.start()
		}
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
	if s.held != nil {
		// The run's creation was never written: there is no lease to release.
		s.held = nil
		s.e.unclaim(s.runID)
		return
	}
	// A deferred step end is written even when the lease looks lost
	// locally: the write is fenced, so it lands only if no one took over.
	if s.deferred != nil {
		ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		_ = s.flush(ctx)
		cancel()
	}
	s.lease.halt()
	// A pause or an end released the lease in its own transaction.
	if s.lease.generation() > 0 && s.run.Status == RunRunning {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = s.e.store.Update(ctx, func(tx Tx) error {
			return tx.RunUpdate(RunUpdate{ID: s.runID, From: onlyRunning, CheckLease: true,
				Owner: s.lease.owner, Generation: s.lease.generation(), SetLease: true})
		})
		cancel()
	}
	s.e.unclaim(s.runID)
}

// flush commits a deferred step end on its own.
func (s *session) flush(ctx context.Context) error {
	if s.deferred == nil {
		return nil
	}
	return s.write(ctx, func(tx Tx) error {
		_, err := s.guard(tx, RunUpdate{})
		return err
	})
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

// step returns the cached step at position i for reading or changing. A
// change replaces the step's JSON, never writes into it: views share it
// (see shared).
func (s *session) step(i int) *Step { return &s.steps[i] }

// view builds a policy's or reconciler's view of the run before step index
// upto (-1: all steps). The steps and approvals are the cache itself, read
// only, so a view costs the same however long the run.
func (s *session) view(run Run, upto int) RunView {
	n := len(s.steps)
	if upto >= 0 && upto < n {
		n = upto
	}
	return RunView{Run: copyRun(run), Steps: Steps{s.steps[:n:n]}, Approvals: Approvals{s.approvals[:len(s.approvals):len(s.approvals)]}}
}

// input builds an agent's view of the run for the step at position i.
func (s *session) input(run Run, i int) StepInput {
	// The agent's own copy of the registered specs: compared (no
	// allocation) each step and copied again only where the agent changed
	// it.
	if len(s.agentTools) != len(s.e.specs) {
		s.agentTools = make([]ToolSpec, len(s.e.specs))
		for j, sp := range s.e.specs {
			s.agentTools[j] = copySpec(sp)
		}
	}
	for j, sp := range s.e.specs {
		if t := &s.agentTools[j]; !sameSpec(*t, sp) {
			*t = copySpec(sp)
		}
	}
	return StepInput{Run: copyRun(run), Steps: Steps{s.steps[:i:i]},
		Approvals: Approvals{s.approvals[:len(s.approvals):len(s.approvals)]},
		Tools:     s.agentTools[:len(s.agentTools):len(s.agentTools)]}
}

func sameSpec(a, b ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.SideEffect == b.SideEffect &&
		a.Timeout == b.Timeout && a.Terminal == b.Terminal && bytes.Equal(a.InputSchema, b.InputSchema)
}

// errEnded marks a session that is over because the run paused or ended.
var errEnded = errors.New("agentrt: session is over")
