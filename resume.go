package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// attach is what Resume does before its loop. A nil-outcome verdict means
// the session is open with no step; VerdictAllowed means an approved step is
// open for execute; Pending and Ended mean the session is already over.
func (e *engine) attach(ctx context.Context, runID string) (*session, Verdict, error) {
	if err := e.claim(runID); err != nil {
		return nil, Verdict{}, err
	}
	s := &session{e: e, runID: runID, lease: newLease(e, runID)}
	open := false
	// Deferred, so that a goroutine ended inside attach (a test's crash
	// point) stops its heartbeat too; a takeover that then failed releases
	// the lease it took.
	defer func() {
		if !open {
			s.close()
		}
	}()
	v, err := s.attach(ctx)
	if err != nil || v.Outcome == VerdictPending || v.Outcome == VerdictEnded {
		if v.Run.ID == "" {
			v.Run = copyRun(s.run)
		}
		if err != nil {
			return nil, v, err
		}
		return s, v, nil
	}
	if v.Outcome == VerdictAllowed {
		crashPoint(pointAttachAllowed, runID, s.step(s.cur.idx).Index)
	}
	open = true
	return s, v, nil
}

func (s *session) attach(ctx context.Context) (Verdict, error) {
	run, err := s.e.store.GetRun(ctx, s.runID)
	if err != nil {
		return Verdict{}, err
	}
	s.run = run
	switch {
	case run.Status.Terminal():
		return Verdict{Outcome: VerdictEnded, Run: copyRun(run)}, fmt.Errorf("%w: run %s already ended (%s)", ErrRunEnded, s.runID, run.Status)
	case run.Status == RunWaiting:
		return s.resumeApproved(ctx)
	case run.Status == RunRunning:
		return s.resumeInterrupted(ctx)
	case run.Status == RunEnqueued:
		return s.startEnqueued(ctx)
	default:
		return Verdict{Run: copyRun(run)}, fmt.Errorf("%w: run %s has unknown status %q", ErrRunState, s.runID, run.Status)
	}
}

// resumeApproved continues a WAITING run whose step's latest approval was
// granted: the recorded request executes only if the tool's current schema
// accepts its arguments and the policy, asked again now, allows it or asks
// for precisely the granted approval.
func (s *session) resumeApproved(ctx context.Context) (Verdict, error) {
	if err := s.load(ctx); err != nil {
		return Verdict{}, err
	}
	if d := s.damaged(); d != "" {
		if err := s.failInternal(ctx, []RunStatus{RunWaiting}, "a stored row will not decode: "+d); err != nil {
			return Verdict{}, err
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	idx, grant := s.awaitingGrant()
	if idx < 0 {
		return Verdict{}, fmt.Errorf("%w: run %s waits on no step", ErrRunState, s.runID)
	}
	st := s.step(idx)
	if grant == nil {
		return Verdict{}, fmt.Errorf("%w: step %d has no approval", ErrRunState, st.Index)
	}
	now := s.e.now()
	if grant.Status == ApprovalPending && !grant.ExpiresAt.IsZero() && !now.Before(grant.ExpiresAt) {
		run := s.run
		a := *grant
		err := s.write(ctx, func(tx Tx) error { return expireTx(tx, run, a, now) })
		if err != nil {
			return Verdict{}, err
		}
		r, _ := s.e.store.GetRun(ctx, s.runID)
		s.run = r
		return Verdict{Outcome: VerdictEnded, Run: copyRun(r)}, nil
	}
	if grant.Status == ApprovalPending {
		a := copyApproval(*grant)
		return Verdict{Outcome: VerdictPending, Approval: &a, Run: copyRun(s.run)},
			fmt.Errorf("%w: the latest approval of step %d is pending, not approved", ErrRunState, st.Index)
	}
	if grant.Status != ApprovalApproved {
		return Verdict{}, fmt.Errorf("%w: the latest approval of step %d is %s, not approved", ErrRunState, st.Index, grant.Status)
	}
	if err := VerifyApproval(*grant); err != nil {
		return Verdict{}, err
	}
	if err := s.checkRunRecord(ctx); err != nil {
		return Verdict{}, err
	}
	if err := s.checkGrantRecorded(ctx, st, grant); err != nil {
		return Verdict{}, err
	}
	s.cur = &openStep{idx: idx, decided: true}
	if ttl := s.run.Limits.GrantTTL; ttl > 0 && now.After(grant.DecidedAt.Add(ttl)) {
		g := *grant
		if err := s.expireGrant(ctx, &g, now); err != nil {
			return Verdict{}, err
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	tool := s.e.tools[grant.Request.Spec.Name]
	if tool == nil {
		return s.resumeInvalid(ctx, idx, fmt.Sprintf("tool %q is no longer registered", grant.Request.Spec.Name))
	}
	if err := tool.schema.Check(grant.Request.Args); err != nil {
		return s.resumeInvalid(ctx, idx, err.Error())
	}
	req := ToolRequest{RunID: s.runID, StepID: st.ID, Spec: tool.spec, Args: copyRaw(grant.Request.Args)}
	g := copyApproval(*grant)
	pd, perr := s.evaluate(ctx, tool, req, s.view(s.run, idx))
	return s.apply(ctx, tool, req, pd, perr, &g)
}

// awaitingGrant picks the step a resume continues: the first step awaiting
// approval whose latest approval is granted (a gate's concurrent calls may
// leave several awaiting), else the last one awaiting, with its latest
// approval (nil when it has none). It returns -1 when no step awaits.
func (s *session) awaitingGrant() (int, *Approval) {
	idx := -1
	var grant *Approval
	for i := range s.steps {
		if s.steps[i].Status != StepAwaitingApproval {
			continue
		}
		var latest *Approval
		for k := range s.approvals {
			if s.approvals[k].StepID == s.steps[i].ID {
				latest = &s.approvals[k]
			}
		}
		if latest != nil && latest.Status == ApprovalApproved {
			return i, latest
		}
		idx, grant = i, latest
	}
	return idx, grant
}

// checkGrantRecorded refuses a grant that is not what the event chain
// recorded for it. The approval row binds itself by its hash, but whoever
// can write the row can recompute that hash; the chain also holds the step's
// decision (step.decided) and the hash the pause asked for
// (approval.requested), and a forger who rewrites those rewrites the chain
// from the pause on, which a head kept since exposes. The earliest of each
// event counts, so events appended after a kept head change nothing.
// stepEventsPage is how many of a step's events a grant check reads at once.
const stepEventsPage = 64

func (s *session) checkGrantRecorded(ctx context.Context, st *Step, g *Approval) error {
	mismatch := func(field, recorded, granted string) error {
		return &GrantMismatchError{RunID: s.runID, ApprovalID: g.ID, Field: field, Recorded: recorded, Granted: granted}
	}
	// Only this step's events are read, a page at a time, so a resume of a
	// long run does not load the run's whole history.
	var decided, requested, decidedGrant *Event
	for after := int64(0); decided == nil || requested == nil || decidedGrant == nil; {
		evs, err := s.e.store.ListStepEvents(ctx, s.runID, st.ID, after, stepEventsPage)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Seq
		for i := range evs {
			ev := &evs[i]
			switch ev.Type {
			case EventStepDecided:
				if decided == nil {
					decided = ev
				}
			case EventApprovalRequest:
				if p, err := PayloadAs[ApprovalRequestedPayload](*ev); requested == nil && err == nil && p.ApprovalID == g.ID {
					requested = ev
				}
			case EventApprovalDecided:
				if p, err := PayloadAs[ApprovalDecidedPayload](*ev); decidedGrant == nil && err == nil && p.ApprovalID == g.ID {
					decidedGrant = ev
				}
			}
		}
	}
	if decided == nil {
		return mismatch("decision", "", "")
	}
	d, err := PayloadAs[Decision](*decided)
	if err != nil {
		return mismatch("decision", "", "")
	}
	if d.Tool != g.Request.Spec.Name {
		return mismatch("tool", d.Tool, g.Request.Spec.Name)
	}
	args := d.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	recorded, rerr := CanonicalJSON(args)
	granted, gerr := CanonicalJSON(g.Request.Args)
	if rerr != nil || gerr != nil || string(recorded) != string(granted) {
		return mismatch("arguments", string(recorded), string(granted))
	}
	if requested == nil || requested.Seq < decided.Seq {
		return mismatch("request", "", "")
	}
	p, err := PayloadAs[ApprovalRequestedPayload](*requested)
	if err != nil {
		return mismatch("request", "", "")
	}
	if p.Hash != g.Hash {
		return mismatch("hash", p.Hash, g.Hash)
	}
	return checkGrantDecided(g, decidedGrant, requested.Seq, mismatch)
}

// checkGrantDecided refuses a grant whose approval.decided event is missing,
// comes before its request, or says other than the row: the status, who
// decided, and the signature (none in both, or the same in both). A row
// flipped to approved, or given a signature copied from elsewhere, has no
// event that matches it.
func checkGrantDecided(g *Approval, granted *Event, requestedSeq int64, mismatch func(field, recorded, granted string) error) error {
	if granted == nil || granted.Seq < requestedSeq {
		return mismatch("decided", "", "")
	}
	p, err := PayloadAs[ApprovalDecidedPayload](*granted)
	if err != nil {
		return mismatch("decided", "", "")
	}
	if p.Status != ApprovalApproved {
		return mismatch("status", string(p.Status), string(g.Status))
	}
	if p.By != g.DecidedBy {
		return mismatch("decider", p.By, g.DecidedBy)
	}
	row, err := signatureJSON(g.Signature)
	if err != nil {
		return err
	}
	// A recorded signature that does not encode is not the row's either.
	if recorded, err := signatureJSON(p.Signature); err != nil || recorded != row {
		return mismatch("signature", recorded, row)
	}
	return nil
}

// signatureJSON is sig's canonical JSON, or "" for no signature: the form
// in which a grant's row and its approval.decided event are compared.
func signatureJSON(sig *DecisionSignature) (string, error) {
	if sig == nil {
		return "", nil
	}
	b, err := json.Marshal(sig)
	if err != nil {
		return "", err
	}
	c, err := CanonicalJSON(b)
	return string(c), err
}

// checkRunRecord refuses a run whose row disagrees with its run.created
// event about its limits: the limits a run started under are in the chain,
// and a writer who edits runs.limits_json (to drop require_signed_grant,
// say) edits only the row. It keeps the recorded limits for the grant
// checks that follow.
func (s *session) checkRunRecord(ctx context.Context) error {
	evs, err := s.e.store.ListEventsAfter(ctx, s.runID, 0, 1)
	if err != nil {
		return err
	}
	if len(evs) == 0 || evs[0].Type != EventRunCreated {
		return &RunRecordError{RunID: s.runID, Field: "run.created"}
	}
	created, err := PayloadAs[RunCreatedPayload](evs[0])
	if err != nil {
		return &RunRecordError{RunID: s.runID, Field: "run.created"}
	}
	var chain, row map[string]any
	cb, _ := json.Marshal(created.Limits)
	rb, _ := json.Marshal(s.run.Limits)
	if json.Unmarshal(cb, &chain) != nil || json.Unmarshal(rb, &row) != nil {
		return &RunRecordError{RunID: s.runID, Field: "limits"}
	}
	keys := map[string]bool{}
	for k := range chain {
		keys[k] = true
	}
	for k := range row {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		c, r := fmt.Sprint(chain[k]), fmt.Sprint(row[k])
		if _, ok := chain[k]; !ok {
			c = "(absent)"
		}
		if _, ok := row[k]; !ok {
			r = "(absent)"
		}
		if c != r {
			return &RunRecordError{RunID: s.runID, Field: "limits." + k, Recorded: c, Stored: r}
		}
	}
	s.recordedLimits = &created.Limits
	return nil
}

// resumeInvalid records that an approved request no longer passes: the run
// goes back to RUNNING and the agent decides again.
func (s *session) resumeInvalid(ctx context.Context, idx int, why string) (Verdict, error) {
	st := s.step(idx)
	obs := failure(ObsInvalidDecision, "invalid decision on resume: "+why)
	now, err := s.enter(ctx, RunResumedPayload{After: "invalid_on_resume"}, func(tx Tx, now time.Time) error {
		return s.endStepTx(tx, st, []StepStatus{StepAwaitingApproval}, StepFailed, obs, nil, now, obs.Summary)
	})
	if err != nil {
		return Verdict{}, err
	}
	s.applyStepEnd(idx, StepFailed, obs, nil, now)
	s.cur = nil
	return Verdict{}, nil
}

// resumeInterrupted takes over a RUNNING run whose lease lapsed: steps in
// flight are marked interrupted in the takeover's transaction; a call to a
// tool that is not read-only waits for the consumer's reconciliation or an
// operator, and is never silently run again.
func (s *session) resumeInterrupted(ctx context.Context) (Verdict, error) {
	run := s.run
	// The lease is judged before any Config.Now reading, on the clock the
	// store keeps lease time on.
	if run.LeaseOwner != "" && run.LeaseOwner != s.lease.owner {
		at, err := s.e.storeNow(ctx)
		if err != nil {
			return Verdict{}, err
		}
		if at.Before(run.LeaseExpiresAt) {
			return Verdict{Run: copyRun(run)}, &RunLeasedError{RunID: s.runID, Owner: run.LeaseOwner, ExpiresAt: run.LeaseExpiresAt}
		}
	}
	if err := s.load(ctx); err != nil {
		return Verdict{}, err
	}
	now := s.e.now()
	exp := s.lease.expiry()
	var inflight, unknowns []int
	for i := range s.steps {
		st := &s.steps[i]
		if st.DecodeError != "" {
			continue
		}
		if st.Status.InFlight() {
			inflight = append(inflight, i)
			if st.Status == StepExecuting {
				// A gate's concurrent calls may leave several.
				unknowns = append(unknowns, i)
			}
		}
	}
	// A previous resume may have died after marking: its observation says
	// the step was executing.
	if len(unknowns) == 0 && len(s.steps) > 0 {
		last := &s.steps[len(s.steps)-1]
		if last.Status == StepInterrupted && last.Observation != nil && interruptedWhile(last.Observation) == string(StepExecuting) {
			unknowns = append(unknowns, len(s.steps)-1)
		}
	}
	unknown := -1
	if n := len(unknowns); n > 0 {
		unknown = unknowns[n-1]
	}
	gen := run.Generation + 1
	obsFor := func(st *Step) *Observation {
		return observation(ObsInterrupted, map[string]string{"previous_status": string(st.Status)}, "step interrupted while "+string(st.Status))
	}
	marks := make([]*Observation, len(inflight))
	err := s.write(ctx, func(tx Tx) error {
		// The lease is judged again on the row as it is inside the write:
		// the owner's heartbeat may have renewed it since it was read, and a
		// renewal changes neither owner nor generation, so the
		// compare-and-set below would not notice.
		if err := s.mayTakeLease(ctx, tx); err != nil {
			return err
		}
		if err := tx.RunUpdate(RunUpdate{ID: s.runID, From: onlyRunning, CheckLease: true, Owner: run.LeaseOwner,
			Generation: run.Generation, SetLease: true, LeaseOwner: s.lease.owner, LeaseExpiresAt: exp, LeaseTTL: s.lease.ttl, BumpGeneration: true}); err != nil {
			return err
		}
		if run.LeaseOwner != "" && run.LeaseOwner != s.lease.owner {
			if err := event(tx, s.runID, "", now, EventLeaseTakenOver, LeaseTakenOverPayload{
				PreviousOwner: run.LeaseOwner, PreviousExpiresAt: run.LeaseExpiresAt, Owner: s.lease.owner}); err != nil {
				return err
			}
		}
		for k, i := range inflight {
			st := &s.steps[i]
			o := obsFor(st)
			marks[k] = o
			if err := tx.StepUpdate(StepUpdate{ID: st.ID, From: []StepStatus{st.Status}, Status: StepInterrupted, Observation: o, FinishedAt: now}); err != nil {
				return err
			}
			if err := event(tx, s.runID, st.ID, now, EventStepInterrupted, StepInterruptedPayload{PreviousStatus: st.Status, Observation: o}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrRunState) {
			if r, rerr := s.e.store.GetRun(ctx, s.runID); rerr == nil && r.LeaseOwner != "" && r.LeaseOwner != s.lease.owner {
				return Verdict{Run: copyRun(r)}, &RunLeasedError{RunID: s.runID, Owner: r.LeaseOwner, ExpiresAt: r.LeaseExpiresAt}
			}
		}
		return Verdict{}, err
	}
	s.run.LeaseOwner, s.run.LeaseExpiresAt, s.run.Generation = s.lease.owner, exp, gen
	s.lease.held(gen, exp)
	s.lease.start()
	for k, i := range inflight {
		s.applyStepEnd(i, StepInterrupted, marks[k], nil, now)
	}
	if n := len(inflight); n > 0 {
		crashPoint(pointInterrupted, s.runID, s.steps[inflight[n-1]].Index)
	}
	if d := s.damaged(); d != "" {
		if err := s.failInternal(ctx, onlyRunning, "a stored row will not decode: "+d); err != nil {
			return Verdict{}, err
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	if s.e.reconcile != nil {
		return s.reconcileInterrupted(ctx, unknown)
	}
	return s.pauseInterrupted(ctx, unknowns)
}

// pauseInterrupted asks an operator about each call in unknowns cut off
// while executing a tool that is not read-only, each on its own approval;
// the run waits once all are asked. With none to ask, the run continues.
func (s *session) pauseInterrupted(ctx context.Context, unknowns []int) (Verdict, error) {
	var ask []int
	for _, i := range unknowns {
		if st := s.step(i); st.Decision != nil {
			if t := s.e.tools[st.Decision.Tool]; t == nil || t.spec.SideEffect != ReadOnly {
				ask = append(ask, i)
			}
		}
	}
	if len(ask) == 0 {
		return s.continueAfterInterruption(ctx)
	}
	var v Verdict
	var err error
	for k, i := range ask {
		// All but the last leave the run RUNNING, as a gate's sibling
		// pause does; the last one waits it.
		s.siblings = k < len(ask)-1
		v, err = s.interruptedPause(ctx, i)
		s.siblings = false
		if err != nil || v.Outcome != VerdictPending {
			return v, err
		}
	}
	return v, err
}

func interruptedWhile(o *Observation) string {
	var c struct {
		Previous string `json:"previous_status"`
	}
	_ = json.Unmarshal(o.Content, &c)
	return c.Previous
}

func (s *session) continueAfterInterruption(ctx context.Context) (Verdict, error) {
	now := s.e.now()
	err := s.write(ctx, func(tx Tx) error {
		if _, err := s.guard(tx, RunUpdate{}); err != nil {
			return err
		}
		return event(tx, s.runID, "", now, EventRunResumed, RunResumedPayload{After: "interruption"})
	})
	if err != nil {
		if lerr := s.lost(ctx, err); lerr != nil {
			return Verdict{}, lerr
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	last := -1
	if n := len(s.steps); n > 0 {
		last = s.steps[n-1].Index
	}
	crashPoint(pointResumed, s.runID, last)
	return Verdict{}, nil
}

// interruptedPause asks an operator about a call cut off while executing a
// tool that is not read-only: approving re-runs it, once, on the same step.
func (s *session) interruptedPause(ctx context.Context, idx int) (Verdict, error) {
	st := s.step(idx)
	d := st.Decision
	tool := s.e.tools[d.Tool]
	if tool == nil || d.InvalidArgs != "" {
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonReconcileConflict,
			detail: fmt.Sprintf("step %d was interrupted while executing %q and cannot wait for an operator", st.Index, d.Tool)})
	}
	args := d.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := tool.schema.Check(args); err != nil {
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonReconcileConflict,
			detail: fmt.Sprintf("step %d was interrupted and its arguments no longer pass the schema: %v", st.Index, err)})
	}
	pargs, err := PolicyJSON(args)
	if err != nil {
		return Verdict{}, err
	}
	name, _ := json.Marshal(d.Tool)
	capab, _ := json.Marshal(map[string]json.RawMessage{"tool": name, "args": pargs})
	notice := "This call started before a crash and its outcome is unknown: it may already have taken effect. Approving runs it again with these arguments; rejecting ends the run."
	pres, _ := json.Marshal(map[string]any{"tool": d.Tool, "args": pargs, "side_effect": tool.spec.SideEffect, "notice": notice})
	pd := PolicyDecision{Outcome: RequireApproval, Reason: "interrupted while executing; outcome unknown",
		Kind: InterruptedSideEffect, Capability: capab, Presentation: pres}
	s.cur = &openStep{idx: idx, decided: true}
	req := ToolRequest{RunID: s.runID, StepID: st.ID, Spec: tool.spec, Args: args}
	return s.pause(ctx, tool, req, pd, s.policyEvent(tool, pd, false), onlyRunning)
}

// reconcileInterrupted asks the consumer's journal what became of the
// interrupted step.
func (s *session) reconcileInterrupted(ctx context.Context, unknown int) (v Verdict, err error) {
	var rec Reconciliation
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("reconcile panicked: %v", p)
			}
		}()
		rec, err = s.e.reconcile(ctx, s.view(s.run, -1))
	}()
	if err != nil {
		if e := s.failInternal(ctx, onlyRunning, "reconcile error: "+err.Error()); e != nil {
			return Verdict{}, e
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	switch rec.Outcome {
	case ReconcileContinue:
		return s.continueAfterInterruption(ctx)
	case ReconcileCompleted:
		result := rec.Result
		if len(result) == 0 {
			result = json.RawMessage("{}")
		}
		if err := checkJSONAs("reconciliation result", result); err != nil {
			if e := s.failInternal(ctx, onlyRunning, err.Error()); e != nil {
				return Verdict{}, e
			}
			return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
		}
		return s.verdictEnded(ctx, ending{status: RunCompleted, reason: ReasonGoalCompleted, result: result,
			detail: "completed by reconciliation: " + rec.Detail})
	case ReconcileConflict:
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonReconcileConflict, detail: rec.Detail})
	case ReconcileWaiting:
		if rec.Pause == nil || unknown < 0 {
			return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonReconcileConflict,
				detail: "reconciliation asked to wait, but no interrupted tool call can wait: " + rec.Detail})
		}
		pd := copyPolicy(*rec.Pause)
		if pd.Outcome != RequireApproval {
			if e := s.failInternal(ctx, onlyRunning, "reconciliation pause is not a require_approval decision"); e != nil {
				return Verdict{}, e
			}
			return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
		}
		st := s.step(unknown)
		tool := s.e.tools[st.Decision.Tool]
		args := st.Decision.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if tool == nil || st.Decision.InvalidArgs != "" || tool.schema.Check(args) != nil {
			return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonReconcileConflict,
				detail: "reconciliation asked to wait, but the interrupted call cannot be approved again"})
		}
		for _, raw := range []*json.RawMessage{&pd.Capability, &pd.Presentation} {
			if len(*raw) == 0 {
				*raw = json.RawMessage("{}")
			}
			if err := CheckJSON(*raw); err != nil {
				if e := s.failInternal(ctx, onlyRunning, "reconciliation pause: "+err.Error()); e != nil {
					return Verdict{}, e
				}
				return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
			}
		}
		s.cur = &openStep{idx: unknown, decided: true}
		req := ToolRequest{RunID: s.runID, StepID: st.ID, Spec: tool.spec, Args: args}
		return s.pause(ctx, tool, req, pd, s.policyEvent(tool, pd, false), onlyRunning)
	default:
		detail := fmt.Sprintf("unknown reconciliation outcome %q", rec.Outcome)
		if e := s.failInternal(ctx, onlyRunning, detail); e != nil {
			return Verdict{}, e
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
}
