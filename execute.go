package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/internal/canon"
)

// recordTimeout bounds how long recording a side effect's outcome may take
// once the caller has given up.
const recordTimeout = 10 * time.Second

// execute runs the open step's allowed request: the tool start is durable
// before the tool runs, and the outcome is recorded on a context that
// outlives the caller's cancellation.
func (s *session) execute(ctx context.Context) (Observation, error) {
	x, err := s.startTool(ctx)
	if err != nil || x.ac == nil {
		return Observation{}, err
	}
	res, callErr, timedOut := s.callTool(ctx, x.ac, x.stepID, nil)
	return s.endTool(ctx, x, res, callErr, timedOut)
}

// toolRun is a tool call whose start is durable: what endTool needs once
// the call returns. It holds no pointer into the step cache, which a
// concurrent step's start may move.
type toolRun struct {
	ac     *allowedCall
	idx    int
	index  int
	stepID string
}

// startTool records the open step's tool start, durable before the tool
// runs, and makes the last lease check before the side effect. A nil
// toolRun (no ac) with a nil error means an operator moved the run on first and
// nothing may run.
func (s *session) startTool(ctx context.Context) (toolRun, error) {
	if s.cur == nil || s.cur.allowed == nil || s.cur.executed {
		return toolRun{}, fmt.Errorf("%w: no allowed request awaits execution", ErrRunState)
	}
	ac := s.cur.allowed
	s.cur.executed = true
	i := s.cur.idx
	st := s.step(i)
	if err := s.grantFresh(ctx, ac); err != nil {
		return toolRun{}, err
	}
	startTx, err := s.startWrite(ac, st)
	if err != nil {
		return toolRun{}, err
	}
	var now time.Time
	if ac.resumed {
		now, err = s.enter(ctx, RunResumedPayload{ApprovalID: ac.approval.ID}, func(tx Tx, now time.Time) error {
			return startTx(tx, now, StepAwaitingApproval)
		})
		if errors.Is(err, ErrRunState) {
			// Another process resumed the run first, or an operator ended
			// it: the loser of the compare-and-set gets ErrRunState and
			// the run as it now is.
			if run, rerr := s.e.store.GetRun(context.WithoutCancel(ctx), s.runID); rerr == nil {
				s.run = run
			}
			s.cur = nil
			return toolRun{}, err
		}
		if err == nil {
			st.StartedAt = now.UTC()
		}
	} else {
		if err := s.requireLive(); err != nil {
			return toolRun{}, err
		}
		now = s.e.now()
		err = s.writeOut(ctx, func(tx Tx) error { return startTx(tx, now, StepDeciding) })
		// A sibling's start may have moved the cache while the lock was out.
		st = s.step(i)
	}
	if err != nil {
		if lerr := s.lost(ctx, err); lerr != nil {
			return toolRun{}, lerr
		}
		return toolRun{}, nil
	}
	s.markStarted(st, ac)

	// The last check before the side effect. A gate's session may have
	// been closed, its lease released, while the start committed: the
	// start stays recorded, as a crash would leave it, and nothing runs.
	if s.closed {
		return toolRun{}, ErrSessionClosed
	}
	if err := s.requireLive(); err != nil {
		return toolRun{}, err
	}
	return toolRun{ac: ac, idx: i, index: st.Index, stepID: st.ID}, nil
}

// markStarted is what a committed tool start leaves in the cached step st:
// executing, under ac's policy decision and this engine's policy id; then
// the crash point that follows the start.
func (s *session) markStarted(st *Step, ac *allowedCall) {
	st.Status = StepExecuting
	p, _ := stored(&ac.policy)
	st.Policy = p
	if s.e.policyID != "" {
		st.PolicyID = s.e.policyID
	}
	crashPoint(pointToolStarted, s.runID, st.Index)
}

// grantFresh expires ac's grant, and says so, when it was decided longer
// ago than the run's GrantTTL.
func (s *session) grantFresh(ctx context.Context, ac *allowedCall) error {
	g := ac.approval
	if g == nil || s.run.Limits.GrantTTL <= 0 {
		return nil
	}
	if now := s.e.now(); now.After(g.DecidedAt.Add(s.run.Limits.GrantTTL)) {
		if err := s.expireGrant(ctx, g, now); err != nil {
			return err
		}
		return fmt.Errorf("%w: the grant was not executed within %s", ErrApprovalExpired, s.run.Limits.GrantTTL)
	}
	return nil
}

// startWrite encodes, outside any transaction, what starting st's tool
// records (its policy decision, the step.policy event and
// step.tool_started), and returns the transaction body that writes it
// from the step status it expects.
func (s *session) startWrite(ac *allowedCall, st *Step) (func(tx Tx, now time.Time, from StepStatus) error, error) {
	started := ToolStartedPayload{Tool: ac.tool.spec.Name, Args: ac.request.Args}
	if ac.approval != nil {
		started.ApprovalID = ac.approval.ID
	}
	// Loop and resume alike record the evaluation with its view and policy id.
	pe := s.policyEvent(ac.tool, ac.policy, true)
	// Encoded here, outside the transaction: the writer that commits it may
	// be carrying other runs' transactions too.
	polJSON, err := json.Marshal(&ac.policy)
	if err != nil {
		return nil, &JSONError{What: "policy decision", Reason: "will not encode: " + err.Error()}
	}
	peJSON, err := json.Marshal(pe.v)
	if err != nil {
		return nil, &JSONError{What: "step.policy event", Reason: "will not encode: " + err.Error()}
	}
	startedJSON, err := json.Marshal(started)
	if err != nil {
		return nil, &JSONError{What: "step.tool_started event", Reason: "will not encode: " + err.Error()}
	}
	stepID := st.ID
	return func(tx Tx, now time.Time, from StepStatus) error {
		u := StepUpdate{ID: stepID, From: statusList(from), Status: StepExecuting, Policy: &ac.policy, Fence: s.fence()}
		u.Encoded[1] = polJSON
		if ac.resumed {
			u.StartedAt = now
		}
		if s.e.policyID != "" {
			u.PolicyID = s.e.policyID
		}
		if err := tx.StepUpdate(u); err != nil {
			return err
		}
		if err := event(tx, s.runID, stepID, now, pe.typ, json.RawMessage(peJSON)); err != nil {
			return err
		}
		return event(tx, s.runID, stepID, now, EventToolStarted, json.RawMessage(startedJSON))
	}, nil
}

// endTool records what the tool call of x returned.
func (s *session) endTool(ctx context.Context, x toolRun, res ToolResult, callErr error, timedOut bool) (Observation, error) {
	ac, i := x.ac, x.idx
	crashPoint(pointToolEffect, s.runID, x.index)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	obs, end := s.outcome(ctx, ac, res, callErr, timedOut)
	// Disclosure rules see the outcome before anything records or returns it.
	obs, end = s.disclose(ctx, ac, obs, end)
	if err := s.finish(rctx, i, ac, obs, end); err != nil {
		return Observation{}, err
	}
	if s.deferred == nil {
		// A deferred end reaches this point when its commit does.
		crashPoint(pointToolFinished, s.runID, x.index)
	}
	out := *obs
	if !s.deferEnds {
		// A gate's caller gets its own copy; the Driver's loop reads nothing.
		out.Content = copyRaw(out.Content)
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, nil
}

// callTool runs the tool under its timeout; a panic is a tool error.
// body, when set, runs in place of the registered tool (ExecuteFunc).
func (s *session) callTool(ctx context.Context, ac *allowedCall, stepID string, body ToolBody) (res ToolResult, err error, timedOut bool) {
	tctx, cancel := context.WithTimeout(ctx, ac.tool.spec.Timeout)
	defer cancel()
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("tool panicked: %v", p)
			}
		}()
		if body != nil {
			var content json.RawMessage
			content, err = body(tctx, copyRaw(ac.request.Args))
			res = ToolResult{Content: content}
			return
		}
		res, err = ac.tool.tool.Call(tctx, ToolCall{RunID: s.runID, StepID: stepID, Args: copyRaw(ac.request.Args)})
	}()
	timedOut = err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	return res, err, timedOut
}

// toolEnd says how a tool's outcome ends things.
type toolEnd int

const (
	toolContinue toolEnd = iota
	toolAbort
	toolComplete
)

// outcome turns what a tool returned into an observation.
func (s *session) outcome(ctx context.Context, ac *allowedCall, res ToolResult, callErr error, timedOut bool) (*Observation, toolEnd) {
	if callErr != nil {
		var abort *AbortRunError
		if errors.As(callErr, &abort) {
			return observation(ObsToolError, map[string]string{"error": abort.Detail, "failure": "abort"}, "tool aborted the run: "+abort.Detail), toolAbort
		}
		if ctx.Err() != nil && !timedOut {
			return observation(ObsInterrupted, map[string]string{"error": callErr.Error(), "outcome": "unknown"},
				"interrupted: the caller gave up; outcome unknown"), toolContinue
		}
		kind := "error"
		if timedOut {
			kind = "timeout"
		}
		obs := observation(ObsToolError, map[string]string{"error": callErr.Error(), "failure": kind}, "tool error: "+callErr.Error())
		var ce ClassifiedError
		switch {
		case timedOut:
			obs.FailureClass = FailureTimeout
		case errors.As(callErr, &ce):
			obs.FailureClass = FailureClass(jsonString(string(ce.FailureClass())))
			obs.FailureMessage = cutRunes(jsonString(ce.FailureMessage()), maxFailureMessage)
		}
		return obs, toolContinue
	}
	content := res.Content
	if len(content) == 0 {
		content = json.RawMessage("{}")
	}
	if err := canon.Check(content); err != nil {
		reason := jsonErr("", err).(*JSONError).Reason
		kept, b64 := verbatim(content)
		m := map[string]string{"error": "tool content is not acceptable JSON: " + reason, "failure": "invalid_content"}
		if b64 {
			m["content_base64"] = kept
		} else {
			m["content"] = kept
		}
		return observation(ObsToolError, m, "tool error: content is not acceptable JSON: "+reason), toolContinue
	}
	h, _ := canon.Hash(content)
	// storedRaw copies the tool's bytes into the form the store keeps.
	obs := &Observation{Kind: ObsToolResult, Content: storedRaw(content), Summary: jsonString(res.Summary), ContentHash: h}
	obs.Blocks = boundBlocks(res.Blocks)
	if ac.tool.spec.Terminal {
		return obs, toolComplete
	}
	return obs, toolContinue
}

// finish records a tool's outcome. If an operator cancelled the run while
// the tool ran, the outcome is appended as a late event.
func (s *session) finish(ctx context.Context, i int, ac *allowedCall, obs *Observation, end toolEnd) error {
	st := s.step(i)
	status := StepDone
	if obs.Failure() {
		status = StepFailed
	}
	finished := toolFinished(st, ac, obs)
	if settling := toolEnding(i, end, obs, finished); settling != nil {
		if err := s.settle(ctx, *settling); err != nil {
			return err
		}
		if s.run.Status != settling.status || s.run.Reason != settling.reason {
			// Someone else ended the run while the tool ran.
			return s.late(ctx, st, ac, obs, s.run)
		}
		return nil
	}
	now := s.e.now()
	dur := activeFor(st, now)
	fin := finished(now)
	if s.deferEnds {
		return s.deferFinish(ctx, i, ac, obs, status, fin, now, dur)
	}
	// endFn reads no session field but the lease: it may commit while a
	// gate's lock is out (writeOut).
	stID := &Step{ID: st.ID}
	endFn := func(tx Tx) error {
		if _, _, _, err := s.guardCAS(tx, RunUpdate{AddActive: dur}); err != nil {
			return err
		}
		if err := event(tx, s.runID, stID.ID, now, EventToolFinished, fin); err != nil {
			return err
		}
		return s.endStepTx(tx, stID, onlyExecuting, status, obs, nil, now, obs.Summary)
	}
	err := s.writeOut(ctx, endFn)
	// A sibling's start may have moved the cache while the lock was out.
	st = s.step(i)
	if err != nil {
		if errors.Is(err, ErrRunState) {
			// Only the run's own end is appended to: an owner that took
			// the run over has marked this step interrupted, and a late
			// outcome from a process that lost the lease is not recorded.
			run, rerr := s.e.store.GetRun(ctx, s.runID)
			if rerr == nil && run.Status.Terminal() && run.Generation == s.lease.generation() {
				return s.late(ctx, st, ac, obs, run)
			}
		}
		return s.lost(ctx, err)
	}
	s.applyStepEnd(i, status, obs, nil, now)
	s.run.ActiveTime += dur
	s.cur = nil
	return nil
}

// toolFinished makes the step.tool_finished payload of obs, given when
// it is recorded.
func toolFinished(st *Step, ac *allowedCall, obs *Observation) func(now time.Time) any {
	return func(now time.Time) any {
		fin := ToolFinishedPayload{Tool: ac.tool.spec.Name, DurationMS: activeFor(st, now).Milliseconds()}
		if obs.Failure() {
			fin.Error = obs.Summary
			fin.FailureClass = obs.FailureClass
		} else {
			fin.Summary = obs.Summary
			fin.ContentHash = obs.ContentHash
			for _, b := range obs.Blocks {
				fin.Blocks = append(fin.Blocks, b.Digest())
			}
		}
		return fin
	}
}

// toolEnding is the run's end a tool's outcome brings (its abort or its
// completion), or nil. Such an outcome is recorded, step.tool_finished
// included, in the transaction that ends the run.
func toolEnding(i int, end toolEnd, obs *Observation, finished func(time.Time) any) *ending {
	switch end {
	case toolAbort:
		var detail string
		_ = json.Unmarshal(obs.Content, &struct {
			Error *string `json:"error"`
		}{&detail})
		return &ending{status: RunFailed, reason: ReasonToolAbort, detail: detail,
			pre:  []pendingEvent{{typ: EventToolFinished, at: finished}},
			step: &stepEnd{idx: i, from: onlyExecuting, obs: obs}}
	case toolComplete:
		return &ending{status: RunCompleted, reason: ReasonGoalCompleted, result: obs.Content,
			pre:  []pendingEvent{{typ: EventToolFinished, at: finished}},
			step: &stepEnd{idx: i, from: onlyExecuting, status: StepDone, obs: obs}}
	}
	return nil
}

// deferFinish leaves a tool's outcome for the Driver's loop to commit with
// its next write, whose guard fences the run and adds the step's
// duration. The closures keep copies, not pointers into the session's
// step slice or open step, which the next step reuses; the payloads are
// encoded now, outside the transaction that will carry them.
func (s *session) deferFinish(ctx context.Context, i int, ac *allowedCall, obs *Observation, status StepStatus, fin any, now time.Time, dur time.Duration) error {
	st := s.step(i)
	stCopy := Step{ID: st.ID}
	toolName := ac.tool.spec.Name
	finJSON, ferr := json.Marshal(fin)
	obsJSON, oerr := json.Marshal(obs)
	if ferr != nil || oerr != nil {
		return s.lost(ctx, &JSONError{What: "tool outcome", Reason: "will not encode"})
	}
	var failedJSON []byte
	if status == StepFailed {
		failedJSON, _ = json.Marshal(StepFailedPayload{obs.Summary, obs.Kind, obs.ContentHash})
	}
	s.deferred = &deferredEnd{active: dur, index: st.Index, fn: func(tx Tx) error {
		if err := event(tx, s.runID, stCopy.ID, now, EventToolFinished, json.RawMessage(finJSON)); err != nil {
			return err
		}
		u := StepUpdate{ID: stCopy.ID, From: onlyExecuting, Status: status, Observation: obs, FinishedAt: now}
		u.Encoded[2] = obsJSON
		if err := tx.StepUpdate(u); err != nil {
			return err
		}
		if failedJSON != nil {
			return event(tx, s.runID, stCopy.ID, now, EventStepFailed, json.RawMessage(failedJSON))
		}
		return nil
	}, late: func(ctx context.Context) error {
		run, err := s.e.store.GetRun(ctx, s.runID)
		if err != nil || !run.Status.Terminal() {
			return err
		}
		lateNow := s.e.now()
		_, err = s.e.store.Update(ctx, func(tx Tx) error {
			return event(tx, s.runID, stCopy.ID, lateNow, EventToolFinished, ToolFinishedPayload{
				Tool: toolName, Late: true, Observation: obs})
		})
		return err
	}}
	s.applyStepEnd(i, status, obs, nil, now)
	s.run.ActiveTime += dur
	s.cur = nil
	return nil
}

// late appends a tool's outcome after the run ended under it.
func (s *session) late(ctx context.Context, st *Step, ac *allowedCall, obs *Observation, run Run) error {
	now := s.e.now()
	err := s.write(ctx, func(tx Tx) error {
		return event(tx, s.runID, st.ID, now, EventToolFinished, ToolFinishedPayload{
			Tool: ac.tool.spec.Name, Late: true, Observation: obs})
	})
	s.run = run
	s.cur = nil
	return err
}
