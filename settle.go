package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// pendingEvent is an event a transaction will append.
type pendingEvent struct {
	typ EventType
	v   any
	// at, when set, builds the payload from the transaction's clock
	// reading instead of v.
	at func(now time.Time) any
}

func (p pendingEvent) payload(now time.Time) any {
	if p.at != nil {
		return p.at(now)
	}
	return p.v
}

// stepEnd is how a settling transaction ends a step.
type stepEnd struct {
	idx    int
	from   []StepStatus
	status StepStatus // "" means failed
	obs    *Observation
	policy *PolicyDecision
	detail string
}

// ending is a run's end: the step it ends and the run commit together.
type ending struct {
	status RunStatus
	reason TerminalReason
	detail string
	result json.RawMessage
	from   []RunStatus // default RUNNING under this session's lease
	pre    []pendingEvent
	step   *stepEnd
	post   []pendingEvent // after the step's events, before run.finished
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
		return event(tx, s.runID, "", now, EventRunFinished, map[string]any{
			"status": end.status, "reason": end.reason, "detail": end.detail, "steps": runBefore.StepCount})
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

// verdictEnded settles and reports the run's end as a verdict.
func (s *session) verdictEnded(ctx context.Context, end ending) (Verdict, error) {
	if err := s.settle(ctx, end); err != nil {
		return Verdict{}, err
	}
	return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
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
		return event(tx, s.runID, "", now, EventRunFinished, map[string]any{
			"status": RunFailed, "reason": ReasonInternalError, "detail": detail, "steps": before.StepCount})
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

// approvalTTL is the shorter positive one of the run's limit and the
// policy's own bound; zero means no expiry. A policy can only shorten the
// limit the run was started with.
func approvalTTL(limit, policy time.Duration) time.Duration {
	if policy > 0 && (limit <= 0 || policy < limit) {
		return policy
	}
	return limit
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
		Presentation: copyRaw(pd.Presentation), Request: rq, Status: ApprovalPending, CreatedAt: now}
	if ttl := approvalTTL(s.run.Limits.ApprovalTTL, pd.TTL); ttl > 0 {
		a.ExpiresAt = now.Add(ttl)
	}
	h, err := ApprovalHash(a.Kind, a.Capability, a.Presentation, a.Request)
	if err != nil {
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: err.Error(), from: from,
			step: &stepEnd{idx: i, from: []StepStatus{st.Status}, obs: failure(ObsInvalidDecision, "internal: "+err.Error())}})
	}
	a.Hash = h
	stepFrom := []StepStatus{st.Status}
	update := RunUpdate{Status: RunWaiting, SetLease: true}
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
		return event(tx, s.runID, st.ID, now, EventApprovalRequest, map[string]any{
			"approval_id": a.ID, "kind": a.Kind, "reason": pd.Reason, "capability": a.Capability,
			"presentation": a.Presentation, "hash": a.Hash})
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
	s.run = before
	s.run.Status = RunWaiting
	s.run.LeaseOwner, s.run.LeaseExpiresAt = "", time.Time{}
	s.run.ActiveTime += active
	s.cur = nil
	out := copyApproval(*ca)
	return Verdict{Outcome: VerdictPending, Approval: &out, Run: copyRun(s.run)}, nil
}

// denyOnResume records a resumed request the policy now denies: the run
// goes back to RUNNING under this session's lease and the step fails.
func (s *session) denyOnResume(ctx context.Context, pd PolicyDecision, policyEvent pendingEvent) (Verdict, error) {
	i := s.cur.idx
	st := s.step(i)
	content := map[string]string{"tool": st.Decision.Tool, "reason": pd.Reason}
	obs := observation(ObsPolicyDenied, content, "denied on resume: "+pd.Reason)
	now, err := s.enter(ctx, map[string]any{"after": "denial"}, func(tx Tx, now time.Time) error {
		if err := event(tx, s.runID, st.ID, now, policyEvent.typ, policyEvent.v); err != nil {
			return err
		}
		return s.endStepTx(tx, st, []StepStatus{StepAwaitingApproval}, StepFailed, obs, &pd, now, obs.Summary)
	})
	if err != nil {
		return Verdict{}, err
	}
	s.applyStepEnd(i, StepFailed, obs, &pd, now)
	s.cur = nil
	o := *obs
	return Verdict{Outcome: VerdictDenied, Observation: &o, Run: copyRun(s.run)}, nil
}

// enter moves a WAITING run to RUNNING under this session's lease (a new
// fencing generation), with run.resumed and whatever more fn writes.
func (s *session) enter(ctx context.Context, resumed any, fn func(tx Tx, now time.Time) error) (time.Time, error) {
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
