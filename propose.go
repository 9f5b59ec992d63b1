package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// A step's decision: recorded (durable before anything judges it, unless
// GateSession.Propose folds it into the step's opening), then settled by
// its kind or judged by the policy.

// propose records the open step's decision, then validates it and asks the
// policy. The decision is durable before anything judges it.
func (s *session) propose(ctx context.Context, raw Decision) (Verdict, error) {
	if s.cur == nil || s.cur.decided {
		return Verdict{}, fmt.Errorf("%w: no open step awaits a decision", ErrRunState)
	}
	i := s.cur.idx
	dc, err := s.decision(raw, s.step(i).ID)
	if err != nil {
		return Verdict{}, s.failInternal(ctx, onlyRunning, err.Error())
	}
	if err := s.writeOut(ctx, dc.fn); err != nil {
		if lerr := s.lost(ctx, err); lerr != nil {
			return Verdict{}, lerr
		}
		return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
	}
	s.decided(i, dc)
	if v, done, err := s.judgeKind(ctx, i, dc); done {
		return v, err
	}
	req := s.request(i, dc)
	pd, perr := s.evaluate(ctx, dc.tool, req, s.view(s.run, i))
	return s.apply(ctx, dc.tool, req, pd, perr, nil)
}

// recordedDecision is a decision made ready to record: fn writes it.
type recordedDecision struct {
	d                  Decision
	rec                *Decision
	tool               *regTool
	argsErr, resultErr string
	specHash           string
	fn                 func(tx Tx) error
}

// decision encodes raw, outside any transaction, as step stepID's
// decision; an error is one the run fails on as internal.
func (s *session) decision(raw Decision, stepID string) (recordedDecision, error) {
	d, argsErr, resultErr := recordable(raw)
	dc := recordedDecision{argsErr: argsErr, resultErr: resultErr}
	if d.Kind == KindToolCall {
		dc.tool = s.e.tools[d.Tool]
	}
	rec, err := stored(&d)
	if err != nil {
		return dc, err
	}
	now := s.e.now()
	if dc.tool != nil {
		dc.specHash = dc.tool.hash
	}
	// Encoded once, outside the transaction: the column and the event hold
	// the same bytes.
	decJSON, err := json.Marshal(&d)
	if err != nil {
		return dc, errors.New("decision will not encode: " + err.Error())
	}
	var key string
	if d.Kind == KindToolCall && dc.tool != nil && argsErr == "" {
		key, _ = RequestKey(d.Tool, d.Args)
	}
	specHash := dc.specHash
	dc.d, dc.rec = d, rec
	dc.fn = func(tx Tx) error {
		// The step's compare-and-set names the run's lease in the same
		// statement.
		u := StepUpdate{ID: stepID, From: onlyDeciding, Decision: &d, SpecHash: specHash, RequestKey: key, Fence: s.fence()}
		u.Encoded[0] = decJSON
		if err := tx.StepUpdate(u); err != nil {
			return err
		}
		return event(tx, s.runID, stepID, now, EventStepDecided, json.RawMessage(decJSON))
	}
	return dc, nil
}

// decided notes in the cache that step i's decision dc is durable.
func (s *session) decided(i int, dc recordedDecision) {
	// A sibling's start may have moved the cache while the lock was out.
	st := s.step(i)
	st.Decision = dc.rec
	st.SpecHash = dc.specHash
	s.cur.decided = true
	crashPoint(pointDecided, s.runID, st.Index)
}

// judgeKind settles a recorded decision that is not a valid tool call:
// done false means it is one, for the policy to judge.
func (s *session) judgeKind(ctx context.Context, i int, dc recordedDecision) (Verdict, bool, error) {
	if why := s.invalidReason(dc.d, dc.argsErr, dc.resultErr); why != "" {
		v, err := s.deny(ctx, nil, failure(ObsInvalidDecision, why), "invalid decision: "+why)
		return v, true, err
	}
	var v Verdict
	var err error
	switch dc.d.Kind {
	case KindComplete:
		result := dc.d.Result
		if len(result) == 0 {
			result = json.RawMessage("{}")
		}
		v, err = s.verdictEnded(ctx, ending{status: RunCompleted, reason: ReasonGoalCompleted, result: result,
			step: &stepEnd{idx: i, from: onlyDeciding, status: StepDone}})
	case KindFail:
		v, err = s.verdictEnded(ctx, ending{status: RunFailed, reason: ReasonGoalFailed, detail: dc.d.Message,
			step: &stepEnd{idx: i, from: onlyDeciding, status: StepDone}})
	default:
		return Verdict{}, false, nil
	}
	return v, true, err
}

// request is the tool request of step i's valid tool call dc.
func (s *session) request(i int, dc recordedDecision) ToolRequest {
	args := dc.d.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return ToolRequest{RunID: s.runID, StepID: s.step(i).ID, Spec: dc.tool.spec, Args: args}
}
