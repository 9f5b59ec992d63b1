package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/canon"
)

// drive is the Driver's loop over the session: step, decide, propose,
// execute, until the run pauses or ends.
func (s *session) drive(ctx context.Context, agent Agent) (Run, error) {
	s.deferEnds = true
	defer func() { s.deferEnds = false }()
	for {
		i, err := s.begin(ctx)
		if err != nil {
			return s.run, err
		}
		if i < 0 {
			return s.run, nil
		}
		dec, err := s.decide(ctx, agent, i)
		if err != nil {
			if errors.Is(err, errEnded) {
				return s.run, nil
			}
			return s.run, err
		}
		v, err := s.propose(ctx, dec)
		if err != nil {
			return s.run, err
		}
		switch v.Outcome {
		case VerdictDenied:
			continue
		case VerdictPending, VerdictEnded:
			return s.run, nil
		}
		if _, err := s.execute(ctx); err != nil {
			return s.run, err
		}
		if s.run.Status != RunRunning {
			return s.run, nil
		}
	}
}

// begin starts the next step, after the limits: it returns the step's
// position in the cache, or -1 when the run is no longer RUNNING (a limit
// ended it, or an operator did).
func (s *session) begin(ctx context.Context) (int, error) {
	st, fn, err := s.opening(ctx)
	if st == nil {
		return -1, err
	}
	if q, ok := s.e.store.(Enqueuer); ok && s.mu != nil && s.deferred == nil && s.held == nil {
		return s.beginQueued(ctx, q, *st, fn)
	}
	if err := s.write(ctx, fn); err != nil {
		return -1, s.lost(ctx, err)
	}
	s.run.StepCount++
	s.steps = append(s.steps, *st)
	// The open step lives in the session: one per session, reused.
	s.curBuf = openStep{idx: len(s.steps) - 1}
	s.cur = &s.curBuf
	crashPoint(pointStepStarted, s.runID, st.Index)
	return s.cur.idx, nil
}

// opening checks that the next step may open (the run RUNNING under this
// session's lease, within its limits) and returns the step and the
// transaction body that records its start, writing nothing. A nil step
// means none opens: with a nil error the run moved on or a limit ended it.
func (s *session) opening(ctx context.Context) (*Step, func(tx Tx) error, error) {
	if s.closed {
		return nil, nil, ErrSessionClosed
	}
	if s.cur != nil {
		return nil, nil, fmt.Errorf("%w: a step is already open", ErrRunState)
	}
	// The session's view of the run is kept by its own writes; anything
	// another process changes (a cancel, a takeover) fails the next
	// compare-and-set, which reads the run to say why.
	run := s.run
	if run.Status != RunRunning {
		return nil, nil, nil
	}
	// A stopping worker lets the run go at a step boundary: the session's
	// close releases the lease, and another worker claims the run.
	if stopRequested(ctx) {
		return nil, nil, nil
	}
	if run.LeaseOwner != s.lease.owner || run.Generation != s.lease.generation() || !s.lease.ok() {
		s.lease.markLost()
		return nil, nil, ErrLeaseLost
	}
	if err := s.load(ctx); err != nil {
		return nil, nil, err
	}
	if d := s.damaged(); d != "" {
		return nil, nil, s.failInternal(ctx, onlyRunning, "a stored row will not decode: "+d)
	}
	if ended, err := s.checkLimits(ctx, run); ended || err != nil {
		return nil, nil, err
	}
	now := s.e.now()
	st := Step{ID: s.e.newID(), RunID: s.runID, Index: run.StepCount, Status: StepDeciding, StartedAt: now}
	startedJSON, _ := json.Marshal(StepStartedPayload{st.Index}) // an int: always encodes
	// fn reads nothing of the session but its lease: a gate's sibling
	// steps open without its lock held while they commit (beginQueued).
	fn := func(tx Tx) error {
		if _, _, _, err := s.guardCAS(tx, RunUpdate{CheckStepCount: true, StepCount: run.StepCount, IncStepCount: true}); err != nil {
			return err
		}
		if err := tx.StepInsert(st); err != nil {
			return err
		}
		return event(tx, s.runID, st.ID, now, EventStepStarted, json.RawMessage(startedJSON))
	}
	return &st, fn, nil
}

// beginQueued opens step st in a gate's session: its write is queued
// with the session's lock held, behind any sibling's opening queued
// before it, and awaited without the lock, so siblings opening at once
// share a commit. The step counts as opened (in the step count, in the
// cache as deciding, and as a sibling in flight) from the moment it is
// queued: a sibling's opening queued next expects its index, and no pause
// may move the run to waiting meanwhile. If its write fails, so does
// every opening queued after it (its compare-and-set expects this one's
// count), and the session ends.
func (s *session) beginQueued(ctx context.Context, q Enqueuer, st Step, fn func(tx Tx) error) (int, error) {
	wait := q.Enqueue(fn)
	s.run.StepCount++
	s.steps = append(s.steps, st)
	i := len(s.steps) - 1
	s.beginning++
	s.mu.Unlock()
	evs, err := wait()
	s.mu.Lock()
	s.beginning--
	if s.relocked != nil {
		s.relocked()
	}
	if err != nil {
		return -1, s.lost(ctx, err)
	}
	s.curBuf = openStep{idx: i}
	s.cur = &s.curBuf
	crashPoint(pointStepStarted, s.runID, st.Index)
	if err := s.e.committed(ctx, evs); err != nil {
		return -1, err
	}
	return i, nil
}

// lost turns a failed write into what the caller should see: the run an
// operator moved on (nil error), a lost lease, or the error itself.
func (s *session) lost(ctx context.Context, err error) error {
	if errors.Is(err, ErrLeaseLost) {
		return ErrLeaseLost
	}
	if errors.Is(err, ErrRunState) {
		run, rerr := s.e.store.GetRun(context.WithoutCancel(ctx), s.runID)
		if rerr == nil {
			// Every acquisition bumps the generation, and nothing else
			// does: a run that moved on under another generation was
			// taken, even if its new owner has since paused or ended it,
			// and that is not an operator's doing.
			if gen := s.lease.generation(); gen > 0 && run.Generation != gen {
				s.lease.markLost()
				return ErrLeaseLost
			}
			s.run = run
			if run.Status != RunRunning {
				s.cur = nil
				return nil
			}
			if run.LeaseOwner != s.lease.owner {
				if s.lease.generation() == 0 {
					// This session never held the run: another
					// process won it.
					return &RunLeasedError{RunID: s.runID, Owner: run.LeaseOwner, ExpiresAt: run.LeaseExpiresAt}
				}
				s.lease.markLost()
				return ErrLeaseLost
			}
		}
	}
	return err
}

// checkLimits ends the run when a limit is reached, in a fixed order: steps,
// consecutive failures, active time, elapsed time, loops.
func (s *session) checkLimits(ctx context.Context, run Run) (bool, error) {
	l := run.Limits
	var reason TerminalReason
	var detail string
	if l.MaxSteps > 0 && run.StepCount >= l.MaxSteps {
		reason, detail = ReasonLimitSteps, fmt.Sprintf("%d steps reached the limit of %d", run.StepCount, l.MaxSteps)
	} else if n := trailingFailures(s.steps); l.MaxConsecutiveToolFailures > 0 && n >= l.MaxConsecutiveToolFailures {
		reason, detail = ReasonRepeatedToolFailures, fmt.Sprintf("%d consecutive failed steps reached the limit of %d", n, l.MaxConsecutiveToolFailures)
	} else if l.MaxActiveTime > 0 && run.ActiveTime >= l.MaxActiveTime {
		reason, detail = ReasonLimitActiveTime, fmt.Sprintf("active time %s reached the limit of %s", run.ActiveTime, l.MaxActiveTime)
	}
	var now time.Time
	if reason == "" && l.MaxElapsedTime > 0 {
		now = s.e.now()
		if el := now.Sub(run.CreatedAt); el >= l.MaxElapsedTime {
			reason, detail = ReasonLimitElapsedTime, fmt.Sprintf("elapsed time %s reached the limit of %s", el, l.MaxElapsedTime)
		}
	}
	if reason != "" {
		return true, s.settle(ctx, ending{status: RunFailed, reason: reason, detail: detail,
			post: []pendingEvent{{typ: EventLimitExceeded, v: LimitExceededPayload{Reason: reason, Detail: detail}}}})
	}
	if l.LoopThreshold > 0 {
		if n, sig := s.trailingRepeats(); n >= l.LoopThreshold {
			detail = fmt.Sprintf("the same call to %q got the same result %d times in a row", sig.tool, n)
			return true, s.settle(ctx, ending{status: RunFailed, reason: ReasonLoopDetected, detail: detail,
				pre: []pendingEvent{{typ: EventLoopDetected, v: LoopDetectedPayload{Repeats: n, Tool: sig.tool, ArgsHash: sig.args, ObservationHash: sig.obs}}}})
		}
	}
	return false, nil
}

func trailingFailures(steps []Step) int {
	n := 0
	for i := len(steps) - 1; i >= 0; i-- {
		o := steps[i].Observation
		if o == nil || !o.Failure() {
			break
		}
		n++
	}
	return n
}

// argsHash is the content hash of the arguments of the step at position i
// ({} when empty), computed once per step and kept beside the cache.
func (s *session) argsHash(i int) string {
	for len(s.argsHashes) <= i {
		s.argsHashes = append(s.argsHashes, "")
	}
	if s.argsHashes[i] == "" {
		args := s.steps[i].Decision.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		h, err := canon.Hash(args)
		if err != nil {
			return ""
		}
		s.argsHashes[i] = h
	}
	return s.argsHashes[i]
}

type callSig struct{ tool, args, obs string }

func (s *session) trailingRepeats() (int, callSig) {
	steps := s.steps
	var first callSig
	n := 0
	for i := len(steps) - 1; i >= 0; i-- {
		st := steps[i]
		if st.Decision == nil || st.Decision.Kind != KindToolCall || st.Observation == nil || st.Status != StepDone {
			break
		}
		ah := s.argsHash(i)
		if ah == "" {
			break
		}
		sig := callSig{st.Decision.Tool, ah, st.Observation.ContentHash}
		if n == 0 {
			first = sig
		} else if sig != first {
			break
		}
		n++
	}
	return n, first
}

// decide asks the agent for the open step's decision. An agent error ends
// the run with the reason its type names; a cancelled context leaves the step
// in flight for Resume to find.
func (s *session) decide(ctx context.Context, agent Agent, i int) (dec Decision, err error) {
	// The agent is asked only under a live lease: the step's start may
	// have waited on the database past the lease this process trusts (a
	// partition), and an agent's decision is a model request.
	if err := s.requireLive(); err != nil {
		return dec, err
	}
	in := s.input(s.run, i)
	if s.e.model != nil {
		in.Model = s.caller(i)
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("agent panicked: %v", p)
			}
		}()
		dec, err = agent.Decide(ctx, in)
	}()
	if err == nil {
		return dec, nil
	}
	if ctx.Err() != nil {
		return dec, ctx.Err()
	}
	if errors.Is(err, ErrLeaseLost) || s.lease.isLost() {
		return dec, ErrLeaseLost
	}
	return dec, s.agentFailed(ctx, err)
}

// agentFailed ends the run for an agent error.
func (s *session) agentFailed(ctx context.Context, err error) error {
	end := failedEnding(err)
	end.step = &stepEnd{idx: s.cur.idx, from: onlyDeciding, obs: failure(ObsInvalidDecision, "agent error: "+end.detail)}
	if err := s.settle(ctx, end); err != nil {
		return err
	}
	return errEnded
}

// failedEnding is the run's end for the error its agent (or a gate's
// caller) could not get past: the reason its type names, agent_error for
// anything else.
func failedEnding(err error) ending {
	reason, detail := ReasonAgentError, err.Error()
	var le *LimitError
	var mu *ModelUnavailableError
	switch {
	case errors.As(err, &le):
		reason, detail = le.Reason, le.Detail
	case errors.As(err, &mu):
		reason = ReasonModelUnavailable
	}
	end := ending{status: RunFailed, reason: reason, detail: detail}
	if reason != ReasonAgentError {
		end.post = []pendingEvent{{typ: EventLimitExceeded, v: LimitExceededPayload{Reason: reason, Detail: detail}}}
	}
	return end
}

// recordable moves values that are not acceptable JSON out of band: the
// bytes are kept verbatim in InvalidArgs/InvalidResult and Args/Result left
// empty, so nothing unusable is stored as if it were JSON.
func recordable(d Decision) (Decision, string, string) {
	var argsErr, resultErr string
	var argsB64, resultB64 bool
	d.Args, d.InvalidArgs, argsB64, argsErr = recordableJSON(d.Args)
	d.Result, d.InvalidResult, resultB64, resultErr = recordableJSON(d.Result)
	d.InvalidBase64 = argsB64 || resultB64
	return d, argsErr, resultErr
}

// recordableJSON is one of a decision's JSON values as recordable keeps it:
// a copy, or nil when it is blank or will not check. One that will not
// check is also returned verbatim (base64 when it is not UTF-8, which b64
// reports) with the reason it was refused.
func recordableJSON(raw json.RawMessage) (kept json.RawMessage, invalid string, b64 bool, reason string) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, "", false, ""
	}
	kept = copyRaw(raw)
	if err := canon.Check(kept); err != nil {
		invalid, b64 = verbatim(kept)
		return nil, invalid, b64, jsonErr("", err).(*JSONError).Reason
	}
	return kept, "", false, ""
}

// invalidReason says why a recorded decision cannot be acted on, or "".
func (s *session) invalidReason(d Decision, argsErr, resultErr string) string {
	if len(d.CallID) > MaxCallIDBytes {
		return fmt.Sprintf("call id is %d bytes, over the limit of %d", len(d.CallID), MaxCallIDBytes)
	}
	switch d.Kind {
	case KindToolCall:
		if d.Tool == "" {
			return "a tool_call must name a tool"
		}
		t := s.e.tools[d.Tool]
		if t == nil {
			return fmt.Sprintf("unknown tool %q", d.Tool)
		}
		if argsErr != "" {
			return "arguments are not acceptable JSON: " + argsErr
		}
		if err := t.schema.Check(d.Args); err != nil {
			return err.Error()
		}
		return ""
	case KindComplete:
		if resultErr != "" {
			return "result is not acceptable JSON: " + resultErr
		}
		return ""
	case KindFail:
		return ""
	case KindTruncated:
		return "the model's reply was cut off by its output cap; no partial tool call is executed"
	case KindRefused:
		return "the model refused; no tool call in its reply is executed"
	case KindNoToolCall:
		return "the model's reply contained no tool call"
	default:
		return fmt.Sprintf("unknown decision kind %q", d.Kind)
	}
}

// evaluate hands the policy the request in PolicyJSON form, recovering a
// panic as a policy error.
func (s *session) evaluate(ctx context.Context, tool *regTool, req ToolRequest, view RunView) (pd PolicyDecision, err error) {
	pargs, err := PolicyJSON(req.Args)
	if err != nil {
		return pd, err
	}
	preq := req
	preq.Args = pargs
	preq.Spec.InputSchema = copyRaw(tool.schema.policySchema)
	if preq.Secrets, err = scanArguments(ctx, s.e.disclosure, tool.spec, pargs); err != nil {
		return pd, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("policy panicked: %v", p)
		}
	}()
	return s.e.policy.Evaluate(ctx, preq, view)
}

// apply dispatches a policy outcome: the one place the loop, a gate and a
// resume turn an outcome into a state change. grant is the approved
// approval being resumed, or nil.
func (s *session) apply(ctx context.Context, tool *regTool, req ToolRequest, pd PolicyDecision, perr error, grant *Approval) (Verdict, error) {
	i := s.cur.idx
	from := onlyRunning
	stepFrom := onlyDeciding
	if grant != nil {
		from = []RunStatus{RunWaiting}
		stepFrom = []StepStatus{StepAwaitingApproval}
	}
	if perr != nil {
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: "policy error: " + perr.Error(), from: from,
			step: &stepEnd{idx: i, from: stepFrom, obs: failure(ObsInvalidDecision, "internal: policy error: "+perr.Error())}})
	}
	pd = copyPolicy(pd)
	policyEvent := s.policyEvent(tool, pd, true)
	switch pd.Outcome {
	case Allow:
		if err := s.checkSignedGrant(ctx, grant, pd); err != nil {
			return Verdict{}, err
		}
		return s.allow(tool, req, pd, grant)
	case RequireApproval:
		for _, v := range []struct {
			what string
			raw  *json.RawMessage
		}{{"capability", &pd.Capability}, {"presentation", &pd.Presentation}} {
			if len(*v.raw) == 0 {
				*v.raw = json.RawMessage("{}")
			}
			if err := checkJSONAs("approval "+v.what, *v.raw); err != nil {
				bare := PolicyDecision{Outcome: pd.Outcome, Reason: pd.Reason, Kind: pd.Kind}
				return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: err.Error(), from: from,
					pre:  []pendingEvent{s.policyEvent(tool, bare, false)},
					step: &stepEnd{idx: i, from: stepFrom, obs: failure(ObsInvalidDecision, "internal: "+err.Error()), policy: &bare}})
			}
		}
		if grant != nil {
			// The grant covers precisely this approval of the request as it
			// would run now, with the tool's current spec: a tool changed
			// since is another request.
			h, err := ApprovalHashWith(pd.Kind, pd.Capability, pd.Presentation, req, pd.Requirement, s.e.policyID)
			if err == nil && (h == grant.Hash || crashGrantCovers(grant, tool, req)) {
				if err := s.checkSignedGrant(ctx, grant, pd); err != nil {
					return Verdict{}, err
				}
				return s.allow(tool, req, pd, grant)
			}
		}
		return s.pause(ctx, tool, req, pd, policyEvent, from)
	case Deny:
		if grant != nil {
			return s.denyOnResume(ctx, pd, policyEvent)
		}
		content := map[string]string{"tool": tool.spec.Name, "reason": pd.Reason}
		obs := observation(ObsPolicyDenied, content, "denied: "+pd.Reason)
		return s.deny(ctx, &pd, obs, "denied: "+pd.Reason, policyEvent)
	case Abort:
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonPolicyAbort, detail: pd.Reason, from: from,
			pre:  []pendingEvent{policyEvent},
			step: &stepEnd{idx: i, from: stepFrom, obs: failure(ObsPolicyDenied, "aborted: "+pd.Reason), policy: &pd}})
	default:
		detail := fmt.Sprintf("unknown policy outcome %q", pd.Outcome)
		return s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonInternalError, detail: detail, from: from,
			step: &stepEnd{idx: i, from: stepFrom, obs: failure(ObsInvalidDecision, "internal: "+detail)}})
	}
}

// policyEvent is the step.policy event for a decision.
func (s *session) policyEvent(tool *regTool, pd PolicyDecision, withView bool) pendingEvent {
	payload := StepPolicyPayload{PolicyDecision: pd, SpecHash: tool.hash}
	if withView {
		payload.PolicyID = s.e.policyID
		r := s.run
		payload.View = ViewSummary{Status: r.Status, StepCount: r.StepCount, ModelCalls: r.ModelCalls, Usage: r.Usage,
			Cost: r.EstimatedCost, ActiveMS: r.ActiveTime.Milliseconds(), Steps: s.cur.idx, Approvals: len(s.approvals)}
	}
	return pendingEvent{typ: EventStepPolicy, v: payload}
}

// allowCall makes the open step's allowed request.
func (s *session) allowCall(tool *regTool, req ToolRequest, pd PolicyDecision, grant *Approval) {
	s.cur.allowedBuf = allowedCall{tool: tool, request: req, policy: pd, specHash: tool.hash, approval: grant, resumed: grant != nil}
	s.cur.allowed = &s.cur.allowedBuf
}

func (s *session) allow(tool *regTool, req ToolRequest, pd PolicyDecision, grant *Approval) (Verdict, error) {
	// req holds the registered spec and the recorded arguments, which the
	// session owns; the verdict's request is a copy for the caller.
	s.allowCall(tool, req, pd, grant)
	if grant == nil {
		crashPoint(pointAllowed, s.runID, s.steps[s.cur.idx].Index)
	}
	v := Verdict{Outcome: VerdictAllowed}
	if !s.deferEnds {
		r := copyRequest(req)
		v.Request = &r
		v.Run = copyRun(s.run)
	}
	return v, nil
}

// deny ends the open step with a failure observation; the run goes on.
func (s *session) deny(ctx context.Context, pd *PolicyDecision, obs *Observation, detail string, pre ...pendingEvent) (Verdict, error) {
	i := s.cur.idx
	st := s.step(i)
	now := s.e.now()
	err := s.write(ctx, func(tx Tx) error {
		if _, err := s.guard(tx, RunUpdate{AddActive: activeFor(st, now)}); err != nil {
			return err
		}
		for _, p := range pre {
			if err := event(tx, s.runID, st.ID, now, p.typ, p.v); err != nil {
				return err
			}
		}
		return s.endStepTx(tx, st, onlyDeciding, StepFailed, obs, pd, now, detail)
	})
	if err != nil {
		if lerr := s.lost(ctx, err); lerr != nil {
			return Verdict{}, lerr
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	s.applyStepEnd(i, StepFailed, obs, pd, now)
	s.run.ActiveTime += activeFor(st, now)
	s.cur = nil
	o := *obs
	o.Content = copyRaw(o.Content)
	return Verdict{Outcome: VerdictDenied, Observation: &o, Run: copyRun(s.run)}, nil
}

// crashGrantCovers reports whether a granted interrupted_side_effect
// approval is the grant the policy asks for: it names exactly this
// request (the tool's current spec and the same canonical arguments). An
// operator approving a call cut off by a crash was shown that it may
// already have taken effect, which is more than an ordinary approval of the
// same request shows, so asking again would only ask twice. The policy is
// still asked first: a deny still denies, and an allow needs no grant.
func crashGrantCovers(grant *Approval, tool *regTool, req ToolRequest) bool {
	if grant.Kind != InterruptedSideEffect || grant.Request.Spec.Name != tool.spec.Name {
		return false
	}
	h, _, err := specHash(grant.Request.Spec)
	if err != nil || h != tool.hash {
		return false
	}
	granted, gerr := CanonicalJSON(grant.Request.Args)
	asked, aerr := CanonicalJSON(req.Args)
	return gerr == nil && aerr == nil && string(granted) == string(asked)
}
