package agentrt

import (
	"context"
	"fmt"
)

// Propose opens the next step and proposes d in it: Step and
// OpenStep.Propose in fewer commits. The policy judges d before anything of
// the step is written; then the step's start and d commit in one
// transaction, and for an allowed tool call the policy's decision and the
// tool start commit in that same transaction, so OpenStep.Execute or
// ExecuteFunc only runs the tool and records its outcome: an allowed call
// costs two commits. The tool start is durable before the tool runs, as
// ever. A denied or pending verdict is recorded as OpenStep.Propose
// records it, after the step and its decision commit. A crash before the
// first commit leaves no step at all: the call was never made, and the
// caller may make it again.
//
// Since the tool start is already recorded, Execute or ExecuteFunc of
// the wrong kind for the tool is refused as ever but after that write:
// nothing runs, and the step stays started until the right one is called
// (or, if none is, as a crash would leave it).
//
// A nil step with VerdictEnded and a nil error means no step opened: the
// run ended (a limit, an operator) and the session is over. Verdicts are
// otherwise as OpenStep.Propose returns them; the step stays open for
// Execute when allowed.
func (gs *GateSession) Propose(ctx context.Context, d Decision) (*OpenStep, Verdict, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if err := gs.usable(); err != nil {
		return nil, Verdict{}, err
	}
	if gs.waitsOnGrant() {
		return nil, Verdict{}, fmt.Errorf("%w: the approved step %d must be executed first", ErrRunState, gs.open[0].index)
	}
	s := gs.s
	st, opening, err := s.opening(ctx)
	if st == nil {
		if err := gs.after(ctx, err); err != nil {
			return nil, Verdict{}, err
		}
		return nil, Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	// The step counts as opened from here (in the step count, in the
	// cache as deciding, and as a sibling in flight), as in beginQueued:
	// its write is queued before the lock is next released, so siblings'
	// openings queue behind it in index order.
	s.run.StepCount++
	s.steps = append(s.steps, *st)
	o := &OpenStep{gs: gs, st: &openStep{idx: len(s.steps) - 1}, id: st.ID, index: st.Index}
	gs.open = append(gs.open, o)
	var v Verdict
	err = gs.on(ctx, o, func() error {
		var err error
		v, err = s.proposeOpening(ctx, d, opening)
		return err
	})
	if v.Outcome != "" && v.Outcome != VerdictEnded && v.Run.ID != "" {
		v.Run = copyRun(s.run)
	}
	if err != nil {
		return nil, v, err
	}
	return o, v, nil
}

// BeginPropose begins run runID, as Begin does, and proposes d in its
// first step, as GateSession.Propose does, in one commit: the run's
// creation commits with the step's opening, its decision and, allowed,
// the tool start. A caller that makes one call per run (the proxy) pays
// two commits for an allowed call; with OpenStep.ExecuteFuncEnd, its
// outcome commits with the run's end. A run that already has the id is
// refused as Begin refuses it, writing nothing. On an error the session
// is closed and not returned.
func (g *Gate) BeginPropose(ctx context.Context, runID, goal string, limits Limits, d Decision) (*GateSession, *OpenStep, Verdict, error) {
	s, err := g.e.beginHeld(ctx, runID, goal, limits)
	if err != nil {
		return nil, nil, Verdict{}, err
	}
	gs := newGateSession(s)
	o, v, err := gs.Propose(ctx, d)
	if err != nil {
		gs.Close()
		return nil, nil, Verdict{}, err
	}
	return gs, o, v, nil
}

// proposeOpening is propose for a step whose opening is not yet written:
// the policy judges the decision first, and the opening, the decision and
// (when allowed) the tool start commit together.
func (s *session) proposeOpening(ctx context.Context, raw Decision, opening func(tx Tx) error) (Verdict, error) {
	i := s.cur.idx
	dc, err := s.decision(raw, s.step(i).ID)
	if err != nil {
		if werr := s.commitOpening(ctx, i, opening); werr != nil {
			return s.openingLost(ctx, werr)
		}
		return Verdict{}, s.failInternal(ctx, onlyRunning, err.Error())
	}
	fn := func(tx Tx) error {
		if err := opening(tx); err != nil {
			return err
		}
		return dc.fn(tx)
	}
	judged := dc.d.Kind == KindToolCall && s.invalidReason(dc.d, dc.argsErr, dc.resultErr) == ""
	var req ToolRequest
	var pd PolicyDecision
	var perr error
	if judged {
		req = s.request(i, dc)
		pd, perr = s.evaluate(ctx, dc.tool, req, s.view(s.run, i))
		if perr == nil && pd.Outcome == Allow {
			return s.allowOpening(ctx, i, dc, req, copyPolicy(pd), fn)
		}
	}
	if err := s.commitOpening(ctx, i, fn); err != nil {
		return s.openingLost(ctx, err)
	}
	s.decided(i, dc)
	if !judged {
		v, _, err := s.judgeKind(ctx, i, dc)
		return v, err
	}
	return s.apply(ctx, dc.tool, req, pd, perr, nil)
}

// allowOpening commits an allowed call's opening, decision, policy
// decision and tool start in one transaction (fn and the start), and
// leaves the step's tool run in s.cur.started for execute.
func (s *session) allowOpening(ctx context.Context, i int, dc recordedDecision, req ToolRequest, pd PolicyDecision, fn func(tx Tx) error) (Verdict, error) {
	s.allowCall(dc.tool, req, pd, nil)
	v := Verdict{Outcome: VerdictAllowed, Run: copyRun(s.run)}
	r := copyRequest(req)
	v.Request = &r
	ac := s.cur.allowed
	startTx, err := s.startWrite(ac, s.step(i))
	if err != nil {
		if werr := s.commitOpening(ctx, i, fn); werr != nil {
			return s.openingLost(ctx, werr)
		}
		s.decided(i, dc)
		return Verdict{}, err
	}
	now := s.e.now()
	err = s.commitOpening(ctx, i, func(tx Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return startTx(tx, now, StepDeciding)
	})
	if err != nil {
		return s.openingLost(ctx, err)
	}
	s.decided(i, dc)
	s.cur.executed = true
	st := s.step(i)
	s.markStarted(st, ac)
	s.cur.started = &toolRun{ac: ac, idx: i, index: st.Index, stepID: st.ID}
	return v, nil
}

// commitOpening commits fn, which opens step i, in the order the step
// took its index: queued with the session's lock held and awaited without
// it where the store queues writes (siblings share the commit), else with
// the lock held.
func (s *session) commitOpening(ctx context.Context, i int, fn func(tx Tx) error) error {
	fn, done := s.heldWrite(ctx, fn)
	q, ok := s.e.store.(Enqueuer)
	if !ok {
		err := s.writeDeferred(ctx, fn)
		done(err)
		if err != nil {
			return err
		}
		crashPoint(pointStepStarted, s.runID, s.step(i).Index)
		return nil
	}
	// The run's creation, when it is not yet written, is queued first: a
	// sibling's opening queued behind it lands after it.
	wait := q.Enqueue(fn)
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	evs, err := wait()
	s.mu.Lock()
	s.cur = cur
	done(err)
	if s.relocked != nil {
		s.relocked()
	}
	if err != nil {
		return err
	}
	crashPoint(pointStepStarted, s.runID, s.step(i).Index)
	return s.e.committed(ctx, evs)
}

// openingLost is what a failed opening's write makes of the call: the
// session ends on the error (an opening queued after it fails too), or the
// run ended meanwhile.
func (s *session) openingLost(ctx context.Context, err error) (Verdict, error) {
	if lerr := s.lost(ctx, err); lerr != nil {
		return Verdict{}, lerr
	}
	return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
}
