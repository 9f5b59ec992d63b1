package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// This file is what a session writes: every helper that composes a
// transaction (the guarded write and its flush, the event append, the run
// guard and transition, a step's end, a pause, a settlement, the entry
// into a resumed run, the lease takeover judgement). loop.go, execute.go,
// settle.go and resume.go keep only the sequence of a step and call these.

// expireGrant expires an approved grant that waited past GrantTTL and
// cancels the run, executing nothing.
func (s *session) expireGrant(ctx context.Context, g *Approval, now time.Time) error {
	st := s.step(s.cur.idx)
	detail := fmt.Sprintf("approval %s expired (%s): granted but not executed within %s", g.ID, ExpiryExecution, s.run.Limits.GrantTTL)
	obs := failure(ObsInterrupted, detail)
	var before Run
	err := s.write(ctx, func(tx Tx) error {
		run, err := tx.RunGet(s.runID)
		if err != nil {
			return err
		}
		before = run
		if err := tx.ApprovalDecide(ApprovalDecide{ID: g.ID, RunID: s.runID, From: ApprovalApproved, Hash: g.Hash,
			Status: ApprovalExpired, DecidedAt: g.DecidedAt, DecidedBy: g.DecidedBy, Note: g.Note}); err != nil {
			return err
		}
		if err := tx.RunUpdate(RunUpdate{ID: s.runID, From: []RunStatus{RunWaiting}, Status: RunCancelled,
			Reason: ReasonApprovalExpired, ReasonDetail: detail, FinishedAt: now, SetLease: true}); err != nil {
			return err
		}
		if err := event(tx, s.runID, st.ID, now, EventApprovalDecided, ApprovalDecidedPayload{
			ApprovalID: g.ID, Status: ApprovalExpired, Note: detail, Expiry: ExpiryExecution}); err != nil {
			return err
		}
		if err := s.endStepTx(tx, st, []StepStatus{StepAwaitingApproval}, StepFailed, obs, nil, now, detail); err != nil {
			return err
		}
		return event(tx, s.runID, "", now, EventRunFinished, RunFinishedPayload{
			Status: RunCancelled, Reason: ReasonApprovalExpired, Detail: detail, Steps: run.StepCount})
	})
	if err != nil {
		return s.lost(ctx, err)
	}
	s.applyStepEnd(s.cur.idx, StepFailed, obs, nil, now)
	for k := range s.approvals {
		if s.approvals[k].ID == g.ID {
			s.approvals[k].Status = ApprovalExpired
		}
	}
	s.run = before
	s.run.Status, s.run.Reason, s.run.ReasonDetail, s.run.FinishedAt = RunCancelled, ReasonApprovalExpired, detail, now.UTC()
	s.cur = nil
	return nil
}

func activeFor(st *Step, now time.Time) time.Duration {
	if d := now.Sub(st.StartedAt); d > 0 {
		return d
	}
	return 0
}

// endStepTx ends a step: its status, observation and events.
func (s *session) endStepTx(tx Tx, st *Step, from []StepStatus, status StepStatus, obs *Observation, pd *PolicyDecision, now time.Time, detail string) error {
	u := StepUpdate{ID: st.ID, From: from, Status: status, Observation: obs, Policy: pd, FinishedAt: now}
	if pd != nil {
		u.PolicyID = s.e.policyID
	}
	if err := tx.StepUpdate(u); err != nil {
		return err
	}
	if status == StepFailed && obs != nil {
		return event(tx, s.runID, st.ID, now, EventStepFailed, StepFailedPayload{detail, obs.Kind, obs.ContentHash})
	}
	return nil
}

// applyStepEnd mirrors a committed step end in the cache.
func (s *session) applyStepEnd(i int, status StepStatus, obs *Observation, pd *PolicyDecision, now time.Time) {
	st := s.step(i)
	st.Status = status
	st.FinishedAt = now.UTC()
	if obs != nil {
		// Observations are built in stored form (runtime content is
		// encoding/json output; tool content goes through storedRaw) and
		// are owned by the session, so the cache keeps them as they are.
		st.Observation = obs
	}
	if pd != nil {
		p, _ := stored(pd)
		st.Policy = p
		if s.e.policyID != "" {
			st.PolicyID = s.e.policyID
		}
	}
}

// expireTx expires a pending approval past its ApprovalTTL and cancels the
// run, in the transaction that found it.
func expireTx(tx Tx, run Run, a Approval, now time.Time) error {
	detail := fmt.Sprintf("approval %s expired (%s): not decided by %s", a.ID, ExpiryDecision, a.ExpiresAt.UTC().Format(time.RFC3339))
	if err := tx.ApprovalDecide(ApprovalDecide{ID: a.ID, RunID: run.ID, From: ApprovalPending, Hash: a.Hash,
		Status: ApprovalExpired, DecidedAt: now}); err != nil {
		return err
	}
	if err := event(tx, run.ID, a.StepID, now, EventApprovalDecided, ApprovalDecidedPayload{
		ApprovalID: a.ID, Status: ApprovalExpired, Note: detail, Expiry: ExpiryDecision}); err != nil {
		return err
	}
	obs := failure(ObsInterrupted, detail)
	if err := tx.StepUpdate(StepUpdate{ID: a.StepID, From: []StepStatus{StepAwaitingApproval}, Status: StepFailed,
		Observation: obs, FinishedAt: now}); err != nil && !errors.Is(err, ErrRunState) {
		return err
	}
	if err := tx.RunUpdate(RunUpdate{ID: run.ID, From: []RunStatus{RunWaiting}, Status: RunCancelled,
		Reason: ReasonApprovalExpired, ReasonDetail: detail, FinishedAt: now, SetLease: true}); err != nil {
		return err
	}
	return event(tx, run.ID, "", now, EventRunFinished, RunFinishedPayload{
		Status: RunCancelled, Reason: ReasonApprovalExpired, Detail: detail, Steps: run.StepCount})
}

// write commits fn (after a deferred step end, if one is waiting), delivers
// the events after the commit, and returns the error fn or the commit
// returned.
func (s *session) write(ctx context.Context, fn func(tx Tx) error) error {
	fn, done := s.heldWrite(ctx, fn)
	err := s.writeDeferred(ctx, fn)
	done(err)
	return err
}

// writeDeferred is write once the run's creation is in fn.
func (s *session) writeDeferred(ctx context.Context, fn func(tx Tx) error) error {
	d := s.deferred
	if d == nil {
		evs, err := s.e.store.Update(ctx, fn)
		if err != nil {
			return err
		}
		return s.e.committed(ctx, evs)
	}
	s.deferred = nil
	s.pendingActive = d.active
	evs, err := s.e.store.Update(ctx, func(tx Tx) error {
		if err := d.fn(tx); err != nil {
			return err
		}
		return fn(tx)
	})
	s.pendingActive = 0
	if err != nil {
		if errors.Is(err, ErrRunState) {
			_ = d.late(context.WithoutCancel(ctx))
		}
		return err
	}
	crashPoint(pointToolFinished, s.runID, d.index)
	return s.e.committed(ctx, evs)
}

// writeOut is write for a step's own writes in a gate's session (its
// decision, its tool start, its outcome): the session's lock is released
// while the transaction commits, so sibling steps' writes can share the
// store's group commit instead of queueing one behind another. fn must read
// nothing of the session but its lease and ids, which do not change. The
// open step is handed back once the lock is held again, and the siblings
// counted again; anything else may have moved meanwhile, so a caller reads
// the step cache afresh after it. Without a gate's lock (the Driver), or
// with a deferred end to carry, it is write.
func (s *session) writeOut(ctx context.Context, fn func(tx Tx) error) error {
	if s.mu == nil || s.deferred != nil || s.held != nil {
		return s.write(ctx, fn)
	}
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	evs, err := s.e.store.Update(ctx, fn)
	s.mu.Lock()
	s.cur = cur
	if s.relocked != nil {
		s.relocked()
	}
	if err != nil {
		return err
	}
	return s.e.committed(ctx, evs)
}

// keySorted writes a payload with its keys in sorted order, the form the
// operator's step.failed events have always had: the chain holds each
// payload's digest, so a writer keeps the bytes it has written before.
type keySorted struct{ v any }

func (k keySorted) encode() ([]byte, error) {
	b, err := json.Marshal(k.v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// event appends one event with a JSON payload built from v.
func event(tx Tx, runID, stepID string, at time.Time, typ EventType, v any) error {
	var payload []byte
	switch p := v.(type) {
	case nil:
		payload = []byte("{}")
	case json.RawMessage:
		payload = p
	case keySorted:
		b, err := p.encode()
		if err != nil {
			return &JSONError{What: string(typ) + " event", Reason: "will not encode: " + err.Error()}
		}
		payload = b
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

// guard requires the run RUNNING under this session's lease (owner and
// fencing generation) and renews the lease, in one compare-and-set
// statement with extra's changes. Only when the statement matches nothing is
// the run read, to say why. It returns the run as the session knows it.
func (s *session) guard(tx Tx, extra RunUpdate) (Run, error) {
	exp, renewed, run, err := s.guardCAS(tx, extra)
	if err != nil {
		if run.ID == "" {
			return s.run, err
		}
		return run, err
	}
	run = s.run
	if renewed {
		run.LeaseExpiresAt = exp
	}
	return run, nil
}

// guardCAS is guard's statement alone: it reads no field of the session
// but its lease, so a transaction that commits while the session's lock
// is released (writeOut) may run it. On a refusal it returns the run as
// the transaction read it, if it read it.
func (s *session) guardCAS(tx Tx, extra RunUpdate) (exp time.Time, renewed bool, run Run, err error) {
	exp = s.lease.expiry()
	gen := s.lease.generation()
	extra.AddActive += s.pendingActive
	extra.ID = s.runID
	extra.From = onlyRunning
	extra.CheckLease = true
	extra.Owner = s.lease.owner
	extra.Generation = gen
	if extra.Status == "" || extra.Status == RunRunning {
		extra.SetLease = true
		extra.LeaseOwner = s.lease.owner
		extra.LeaseExpiresAt = exp
		extra.LeaseTTL = s.lease.ttl
	}
	if err := tx.RunUpdate(extra); err != nil {
		if !errors.Is(err, ErrRunState) {
			return exp, false, Run{}, err
		}
		run, rerr := tx.RunGet(s.runID)
		if rerr != nil {
			return exp, false, Run{}, rerr
		}
		if run.Status != RunRunning {
			return exp, false, run, fmt.Errorf("%w: run %s is %s", ErrRunState, s.runID, run.Status)
		}
		if run.LeaseOwner != s.lease.owner || run.Generation != gen {
			s.lease.markLost()
			return exp, false, run, ErrLeaseLost
		}
		return exp, false, run, err
	}
	return exp, extra.SetLease, Run{}, nil
}

// guardRead is guard for writers that run beside the loop (model calls made
// concurrently within a step): it reads the run inside the transaction
// rather than trusting the session's copy, and returns the run as updated.
func (s *session) guardRead(tx Tx, extra RunUpdate) (Run, error) {
	run, err := tx.RunGet(s.runID)
	if err != nil {
		return run, err
	}
	if run.Status != RunRunning {
		return run, fmt.Errorf("%w: run %s is %s", ErrRunState, s.runID, run.Status)
	}
	gen := s.lease.generation()
	if run.LeaseOwner != s.lease.owner || run.Generation != gen {
		s.lease.markLost()
		return run, ErrLeaseLost
	}
	exp := s.lease.expiry()
	extra.ID, extra.From = s.runID, onlyRunning
	extra.CheckLease, extra.Owner, extra.Generation = true, s.lease.owner, gen
	extra.SetLease, extra.LeaseOwner, extra.LeaseExpiresAt, extra.LeaseTTL = true, s.lease.owner, exp, s.lease.ttl
	if err := tx.RunUpdate(extra); err != nil {
		return run, err
	}
	run.LeaseExpiresAt = exp
	return run, nil
}

// fence names this session's lease for a step write that must still hold it.
func (s *session) fence() RunFence {
	return RunFence{RunID: s.runID, Owner: s.lease.owner, Generation: s.lease.generation()}
}

// settle ends the run (and the step it ends) in one transaction.
func (s *session) settle(ctx context.Context, end ending) error {
	now := s.e.now()
	from := end.from
	if len(from) == 0 {
		from = onlyRunning
	}
	var st *Step
	var stStatus StepStatus
	if end.step != nil {
		st = s.step(end.step.idx)
		stStatus = end.step.status
		if stStatus == "" {
			stStatus = StepFailed
		}
	}
	var active time.Duration
	if st != nil && from[0] == RunRunning {
		active = activeFor(st, now)
	}
	update := RunUpdate{Status: end.status, Reason: end.reason, ReasonDetail: end.detail, Result: end.result,
		FinishedAt: now, SetLease: true, AddActive: active}
	var runBefore Run
	err := s.write(ctx, func(tx Tx) error {
		var err error
		runBefore, err = s.transition(tx, from, update)
		if err != nil {
			return err
		}
		stepID := ""
		if st != nil {
			stepID = st.ID
		}
		for _, p := range end.pre {
			if err := event(tx, s.runID, stepID, now, p.typ, p.payload(now)); err != nil {
				return err
			}
		}
		if st != nil {
			detail := end.step.detail
			if detail == "" && end.step.obs != nil {
				detail = end.step.obs.Summary
			}
			if err := s.endStepTx(tx, st, end.step.from, stStatus, end.step.obs, end.step.policy, now, detail); err != nil {
				return err
			}
		}
		for _, p := range end.post {
			if err := event(tx, s.runID, stepID, now, p.typ, p.v); err != nil {
				return err
			}
		}
		return event(tx, s.runID, "", now, EventRunFinished, RunFinishedPayload{
			Status: end.status, Reason: end.reason, Detail: end.detail, Steps: runBefore.StepCount})
	})
	if err != nil {
		return s.lost(ctx, err)
	}
	if st != nil {
		s.applyStepEnd(end.step.idx, stStatus, end.step.obs, end.step.policy, now)
	}
	s.run = runBefore
	s.run.Status, s.run.Reason, s.run.ReasonDetail = end.status, end.reason, end.detail
	s.run.Result = copyRaw(end.result)
	s.run.FinishedAt = now.UTC()
	s.run.LeaseOwner, s.run.LeaseExpiresAt = "", time.Time{}
	s.run.ActiveTime += active
	s.cur = nil
	return nil
}

// transition applies update to the run inside tx: from RUNNING under this
// session's lease (guard), or from another status by compare-and-set on it.
// It returns the run as it was before.
func (s *session) transition(tx Tx, from []RunStatus, update RunUpdate) (Run, error) {
	if from[0] == RunRunning {
		return s.guard(tx, update)
	}
	run, err := tx.RunGet(s.runID)
	if err != nil {
		return run, err
	}
	update.ID, update.From = s.runID, from
	return run, tx.RunUpdate(update)
}

// failInternal fails the run as internal_error, failing every in-flight or
// awaiting step, without rewriting a row that would not decode.
func (s *session) failInternal(ctx context.Context, from []RunStatus, detail string) error {
	now := s.e.now()
	var ended []int
	for i := range s.steps {
		st := &s.steps[i]
		if st.DecodeError == "" && (st.Status.InFlight() || st.Status == StepAwaitingApproval) {
			ended = append(ended, i)
		}
	}
	obs := failure(ObsInvalidDecision, "internal: "+detail)
	update := RunUpdate{Status: RunFailed, Reason: ReasonInternalError, ReasonDetail: detail, FinishedAt: now, SetLease: true}
	var before Run
	err := s.write(ctx, func(tx Tx) error {
		var err error
		before, err = s.transition(tx, from, update)
		if err != nil {
			return err
		}
		for _, i := range ended {
			st := &s.steps[i]
			if err := s.endStepTx(tx, st, []StepStatus{st.Status}, StepFailed, obs, nil, now, obs.Summary); err != nil {
				return err
			}
		}
		return event(tx, s.runID, "", now, EventRunFinished, RunFinishedPayload{
			Status: RunFailed, Reason: ReasonInternalError, Detail: detail, Steps: before.StepCount})
	})
	if err != nil {
		return s.lost(ctx, err)
	}
	for _, i := range ended {
		s.applyStepEnd(i, StepFailed, obs, nil, now)
	}
	s.run = before
	s.run.Status, s.run.Reason, s.run.ReasonDetail = RunFailed, ReasonInternalError, detail
	s.run.FinishedAt = now.UTC()
	s.run.LeaseOwner, s.run.LeaseExpiresAt = "", time.Time{}
	s.cur = nil
	return nil
}

// pause moves the run to WAITING on an approval bound to the request, in one
// transaction with the step and its events.
func (s *session) pause(ctx context.Context, tool *regTool, req ToolRequest, pd PolicyDecision, policyEvent pendingEvent, from []RunStatus) (Verdict, error) {
	i := s.cur.idx
	st := s.step(i)
	now := s.e.now()
	// The approval binds the request as recorded (canonical arguments, the
	// registered spec).
	args, err := CanonicalJSON(req.Args)
	if err != nil {
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: err.Error(), from: from,
			step: &stepEnd{idx: i, from: []StepStatus{st.Status}, obs: failure(ObsInvalidDecision, "internal: "+err.Error())}})
	}
	rq := ToolRequest{RunID: s.runID, StepID: st.ID, Spec: copySpec(tool.spec), Args: args}
	a := Approval{ID: s.e.newID(), RunID: s.runID, StepID: st.ID, Kind: pd.Kind, Capability: copyRaw(pd.Capability),
		Presentation: copyRaw(pd.Presentation), Request: rq, Status: ApprovalPending, CreatedAt: now,
		Requirement: copyRequirement(pd.Requirement)}
	if a.Requirement != nil {
		a.PolicyVersion = s.e.policyID
		if err := a.Requirement.Validate(); err != nil {
			return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: err.Error(), from: from,
				step: &stepEnd{idx: i, from: []StepStatus{st.Status}, obs: failure(ObsInvalidDecision, "internal: "+err.Error())}})
		}
	}
	if ttl := approvalTTL(s.run.Limits.ApprovalTTL, pd.TTL); ttl > 0 {
		a.ExpiresAt = now.Add(ttl)
	}
	h, err := ApprovalHashWith(a.Kind, a.Capability, a.Presentation, a.Request, a.Requirement, a.PolicyVersion)
	if err != nil {
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: err.Error(), from: from,
			step: &stepEnd{idx: i, from: []StepStatus{st.Status}, obs: failure(ObsInvalidDecision, "internal: "+err.Error())}})
	}
	a.Hash = h
	stepFrom := []StepStatus{st.Status}
	update := RunUpdate{Status: RunWaiting, SetLease: true}
	// With sibling steps in flight (a gate's concurrent calls) the run
	// stays RUNNING under this lease; it waits once none is (waitIdle).
	waits := from[0] != RunRunning || !s.siblings
	if !waits {
		update = RunUpdate{}
	}
	var active time.Duration
	if from[0] == RunRunning {
		active = activeFor(st, now)
		update.AddActive = active
	} else {
		// A re-pause on resume moves no status, so it is fenced by the
		// generation the resumer read: of two racing to re-pause one step,
		// one adds the approval and the other gets ErrRunState.
		update.CheckLease, update.Owner, update.Generation = true, "", s.run.Generation
		update.BumpGeneration = true
	}
	var before Run
	err = s.write(ctx, func(tx Tx) error {
		var err error
		before, err = s.transition(tx, from, update)
		if err != nil {
			return err
		}
		u := StepUpdate{ID: st.ID, From: stepFrom, Status: StepAwaitingApproval, Policy: &pd, ClearOutcome: st.Status == StepInterrupted}
		if s.e.policyID != "" && policyEvent.v != nil {
			u.PolicyID = s.e.policyID
		}
		if err := tx.StepUpdate(u); err != nil {
			return err
		}
		if err := event(tx, s.runID, st.ID, now, policyEvent.typ, policyEvent.v); err != nil {
			return err
		}
		if err := tx.ApprovalInsert(a); err != nil {
			return err
		}
		return event(tx, s.runID, st.ID, now, EventApprovalRequest, ApprovalRequestedPayload{
			ApprovalID: a.ID, Kind: a.Kind, Reason: pd.Reason, Capability: a.Capability,
			Presentation: a.Presentation, Hash: a.Hash, Requirement: a.Requirement, PolicyVersion: a.PolicyVersion})
	})
	if err != nil {
		if from[0] != RunRunning && errors.Is(err, ErrRunState) {
			// Another resumer re-paused or moved the run first.
			if run, rerr := s.e.store.GetRun(context.WithoutCancel(ctx), s.runID); rerr == nil {
				s.run = run
			}
			s.cur = nil
			return Verdict{}, err
		}
		if lerr := s.lost(ctx, err); lerr != nil {
			return Verdict{}, lerr
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	if st.Status == StepInterrupted {
		st.Observation, st.FinishedAt = nil, time.Time{}
	}
	st.Status = StepAwaitingApproval
	p, _ := stored(&pd)
	st.Policy = p
	if u := s.e.policyID; u != "" {
		st.PolicyID = u
	}
	ca, _ := stored(&a)
	s.approvals = append(s.approvals, *ca)
	if waits {
		s.run = before
		s.run.Status = RunWaiting
		s.run.LeaseOwner, s.run.LeaseExpiresAt = "", time.Time{}
	}
	s.run.ActiveTime += active
	s.cur = nil
	out := copyApproval(*ca)
	return Verdict{Outcome: VerdictPending, Approval: &out, Run: copyRun(s.run)}, nil
}

// enter moves a WAITING run to RUNNING under this session's lease (a new
// fencing generation), with run.resumed and whatever more fn writes.
func (s *session) enter(ctx context.Context, resumed RunResumedPayload, fn func(tx Tx, now time.Time) error) (time.Time, error) {
	now := s.e.now()
	exp := s.lease.expiry()
	var gen int64
	var before Run
	err := s.write(ctx, func(tx Tx) error {
		run, err := tx.RunGet(s.runID)
		if err != nil {
			return err
		}
		if run.Status != RunWaiting {
			return fmt.Errorf("%w: run %s is %s", ErrRunState, s.runID, run.Status)
		}
		before = run
		gen = run.Generation + 1
		if err := tx.RunUpdate(RunUpdate{ID: s.runID, From: []RunStatus{RunWaiting}, CheckLease: true, Owner: run.LeaseOwner,
			Generation: run.Generation, Status: RunRunning, SetLease: true, LeaseOwner: s.lease.owner, LeaseExpiresAt: exp, LeaseTTL: s.lease.ttl,
			BumpGeneration: true}); err != nil {
			return err
		}
		// Writes later in this transaction are fenced by the new lease.
		s.lease.held(gen, exp)
		if err := event(tx, s.runID, "", now, EventRunResumed, resumed); err != nil {
			return err
		}
		if fn != nil {
			return fn(tx, now)
		}
		return nil
	})
	if err != nil {
		return now, err
	}
	s.run = before
	s.run.Status = RunRunning
	s.run.LeaseOwner, s.run.LeaseExpiresAt, s.run.Generation = s.lease.owner, exp, gen
	s.lease.held(gen, exp)
	s.lease.start()
	step := -1
	if s.cur != nil {
		step = s.step(s.cur.idx).Index
	}
	crashPoint(pointResumed, s.runID, step)
	return now, nil
}

// mayTakeLease is the one lease takeover judgement: inside tx, on the row
// as it is now (read again here), this session may take the run's lease
// unless another owner holds it and it is still live by the lease clock.
// The holder's heartbeat may have renewed it since it was last read, and a
// renewal changes neither owner nor generation, so a compare-and-set alone
// would not notice.
func (s *session) mayTakeLease(ctx context.Context, tx Tx) error {
	cur, err := tx.RunGet(s.runID)
	if err != nil {
		return err
	}
	if cur.LeaseOwner == "" || cur.LeaseOwner == s.lease.owner {
		return nil
	}
	at, err := s.e.leaseNow(ctx, tx)
	if err != nil {
		return err
	}
	if at.Before(cur.LeaseExpiresAt) {
		return &RunLeasedError{RunID: s.runID, Owner: cur.LeaseOwner, ExpiresAt: cur.LeaseExpiresAt}
	}
	return nil
}

// waitIdle moves a RUNNING run whose steps are none in flight, and some
// awaiting approval, to WAITING_FOR_APPROVAL, releasing the lease, with
// run.waiting naming the approvals it waits on (pending, or granted and
// not yet executed): a gate's step that asked
// for approval while a sibling ran waits, at the sibling's end, as a lone
// step would have at its pause. It writes nothing otherwise.
func (s *session) waitIdle(ctx context.Context) error {
	if s.run.Status != RunRunning {
		return nil
	}
	var ids []string
	for i := range s.steps {
		st := &s.steps[i]
		if st.Status.InFlight() {
			return nil
		}
		if st.Status != StepAwaitingApproval {
			continue
		}
		// The step's latest approval is what it waits on: pending, or
		// granted and not yet executed (Attach opens it).
		var latest *Approval
		for k := range s.approvals {
			if s.approvals[k].StepID == st.ID {
				latest = &s.approvals[k]
			}
		}
		if latest != nil && (latest.Status == ApprovalPending || latest.Status == ApprovalApproved) {
			ids = append(ids, latest.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	now := s.e.now()
	var before Run
	err := s.write(ctx, func(tx Tx) error {
		var err error
		before, err = s.guard(tx, RunUpdate{Status: RunWaiting, SetLease: true})
		if err != nil {
			return err
		}
		return event(tx, s.runID, "", now, EventRunWaiting, RunWaitingPayload{ApprovalIDs: ids})
	})
	if err != nil {
		return s.lost(ctx, err)
	}
	s.run = before
	s.run.Status = RunWaiting
	s.run.LeaseOwner, s.run.LeaseExpiresAt = "", time.Time{}
	return nil
}
