package agentrt

import (
	"context"
	"encoding/json"
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

// verdictEnded settles and reports the run's end as a verdict.
func (s *session) verdictEnded(ctx context.Context, end ending) (Verdict, error) {
	if err := s.settle(ctx, end); err != nil {
		return Verdict{}, err
	}
	return Verdict{Outcome: VerdictEnded, Run: copyRun(s.run)}, nil
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

// denyOnResume records a resumed request the policy now denies: the run
// goes back to RUNNING under this session's lease and the step fails.
func (s *session) denyOnResume(ctx context.Context, pd PolicyDecision, policyEvent pendingEvent) (Verdict, error) {
	i := s.cur.idx
	st := s.step(i)
	content := map[string]string{"tool": st.Decision.Tool, "reason": pd.Reason}
	obs := observation(ObsPolicyDenied, content, "denied on resume: "+pd.Reason)
	now, err := s.enter(ctx, RunResumedPayload{After: "denial"}, func(tx Tx, now time.Time) error {
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
