package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/proxy/internal/reply"
	"github.com/agentrt/agentrt/trace"

	agentrt "github.com/agentrt/agentrt"
)

// What came of a call whose run ran, or ended without this proxy: the
// tool step classified, an unknown outcome asked of an operator in a new
// run, a run whose lease lapsed taken over, a row settled from the record.

// recover takes over a run whose lease lapsed. A mutating call cut off
// while its tool ran waits for an operator (reconcile); anything else
// never took effect, or has a recorded outcome.
func (p *Proxy) recover(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	gs, v, err := p.gate.Attach(ctx, r.RunID)
	if errors.Is(err, agentrt.ErrRunLeased) {
		return reply.InProgress(), false
	}
	if err != nil {
		return answer{}, true
	}
	defer gs.Close()
	switch v.Outcome {
	case agentrt.VerdictPending:
		return p.opened(ctx, c, r, v.Approval)
	case agentrt.VerdictEnded:
		return p.settleRecord(ctx, c, r)
	}
	steps, err := p.store.ListSteps(ctx, r.RunID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	if st := executedStep(steps); st != nil {
		// The tool's outcome is recorded; the proxy stopped before it
		// closed the run.
		return p.executed(ctx, c, r, gs, st.ID, *st.Observation, false)
	}
	p.closeRun(ctx, gs, "abandoned before its tool started; run afresh")
	nr := &index.Row{Session: r.Session, Key: r.Key, Tool: r.Tool, SideEffect: r.SideEffect, RunID: p.newRunID(),
		CreatedAt: p.now(), Open: true, State: index.StateBegun, UnknownOf: r.UnknownOf, Interrupted: r.Interrupted}
	if err := p.ix.Replace(ctx, r, nr, p.now()); err != nil {
		return p.internal(err, "the record could not be written")
	}
	return p.fresh(ctx, c, nr)
}

// executedStep is the step whose tool ran (or was cut off while it ran),
// or nil.
func executedStep(steps []agentrt.Step) *agentrt.Step {
	for i := len(steps) - 1; i >= 0; i-- {
		st := &steps[i]
		if st.Decision == nil || st.Decision.Kind != agentrt.KindToolCall || st.Observation == nil {
			continue
		}
		switch st.Observation.Kind {
		case agentrt.ObsToolResult, agentrt.ObsToolError:
			return st
		case agentrt.ObsInterrupted:
			if previous(st.Observation) == agentrt.StepExecuting || outcomeField(st.Observation) == "unknown" {
				return st
			}
		}
	}
	return nil
}

func previous(o *agentrt.Observation) agentrt.StepStatus {
	var c struct {
		Previous agentrt.StepStatus `json:"previous_status"`
	}
	_ = json.Unmarshal(o.Content, &c)
	return c.Previous
}

func outcomeField(o *agentrt.Observation) string {
	var c struct {
		Outcome string `json:"outcome"`
	}
	_ = json.Unmarshal(o.Content, &c)
	return c.Outcome
}

// classified is what came of a tool step.
type classified struct {
	outcome CallOutcome
	detail  string
	ended   string // for an unknown outcome: how the call ended
}

// classify reads a tool step's observation: its kind, and for a tool
// error the failure class the runtime recorded from the adapter's error.
// A failure of a mutating call with no class (recorded by an older build)
// counts as unknown.
func classify(o agentrt.Observation, mutating bool) classified {
	unknown := func(ended string) classified {
		if !mutating {
			return classified{outcome: OutcomeFailed, detail: "it did not finish"}
		}
		return classified{outcome: OutcomeUnknown, ended: ended}
	}
	var f struct {
		Failure string `json:"failure"`
		Error   string `json:"error"`
	}
	_ = json.Unmarshal(o.Content, &f)
	switch o.Kind {
	case agentrt.ObsToolResult:
		return classified{outcome: OutcomeSucceeded}
	case agentrt.ObsInterrupted:
		return unknown("cut_off")
	}
	if f.Failure == "invalid_content" {
		return classified{outcome: OutcomeUnrecorded, detail: f.Error}
	}
	switch o.FailureClass {
	case agentrt.FailureTimeout:
		return unknown("timed_out")
	case agentrt.FailureRefused:
		return classified{outcome: OutcomeDenied, detail: f.Error}
	case agentrt.FailureServerError:
		return classified{outcome: OutcomeFailed, detail: o.FailureMessage}
	case agentrt.FailureUnreadable:
		return classified{outcome: OutcomeUnrecorded, detail: f.Error}
	case agentrt.FailureUnknownOutcome:
		return unknown("no_answer")
	}
	if f.Failure == "timeout" {
		return unknown("timed_out")
	}
	return unknown("unclassified")
}

// executed settles a call whose tool ran, closing its run; an unknown
// outcome asks an operator in a new run. here says this call ran it; a
// call that found it recorded (after a crash, or another call's) is told
// it already ran.
func (p *Proxy) executed(ctx context.Context, c *call, r *index.Row, gs *agentrt.GateSession, stepID string, obs agentrt.Observation, here bool) (answer, bool) {
	cl := classify(obs, c.t.mutating())
	told := func(a answer) answer {
		if here || !cl.outcome.Executed() {
			return a
		}
		return reply.Duplicate(0, cl.outcome, cl.detail)
	}
	switch cl.outcome {
	case OutcomeSucceeded:
		p.closeRun(ctx, gs, "done")
		return p.settle(ctx, c, r, OutcomeSucceeded, "", told(answer{Content: obs.Content, Blocks: obs.Blocks}))
	case OutcomeFailed:
		p.closeRun(ctx, gs, "the server reported a failure")
		return p.settle(ctx, c, r, OutcomeFailed, cl.detail, told(reply.Failed(cl.detail)))
	case OutcomeUnrecorded:
		p.closeRun(ctx, gs, "the result could not be recorded")
		return p.settle(ctx, c, r, OutcomeUnrecorded, cl.detail, told(reply.Unrecorded(cl.detail)))
	case OutcomeDenied:
		p.closeRun(ctx, gs, "refused before it reached the server")
		if c.t.up.loginBroken() {
			return p.settle(ctx, c, r, OutcomeDenied, cl.detail, reply.Unavailable(serverUnreachable))
		}
		if r.Interrupted != "" {
			return p.settle(ctx, c, r, OutcomeUnknownDenied, cl.detail, reply.Refused(cl.detail))
		}
		return p.settle(ctx, c, r, OutcomeDenied, cl.detail, reply.Refused(cl.detail))
	}
	p.closeRun(ctx, gs, "its outcome is unknown; an operator is asked")
	st, err := p.stepOf(ctx, r.RunID, stepID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	in := interruption{RunID: r.RunID, StepID: stepID, StartedAt: st.StartedAt.UTC().Format(time.RFC3339Nano), Ended: cl.ended}
	return p.askUnknown(ctx, c, r, in)
}

func (p *Proxy) stepOf(ctx context.Context, runID, stepID string) (agentrt.Step, error) {
	steps, err := p.store.ListSteps(ctx, runID)
	if err != nil {
		return agentrt.Step{}, err
	}
	for _, st := range steps {
		if st.ID == stepID {
			return st, nil
		}
	}
	return agentrt.Step{}, fmt.Errorf("run %s has no step %s", runID, stepID)
}

// askUnknown replaces r, whose call's outcome is unknown, with a new run
// that asks an operator about re-running the recorded request, and blocks
// the tool while it waits.
func (p *Proxy) askUnknown(ctx context.Context, c *call, r *index.Row, in interruption) (answer, bool) {
	b, _ := json.Marshal(in)
	now := p.now()
	old := *r
	old.Outcome, old.SettledAt = OutcomeUnknown, now
	nr := &index.Row{Session: r.Session, Key: r.Key, Tool: r.Tool, SideEffect: r.SideEffect, RunID: p.newRunID(), CreatedAt: now,
		Open: true, State: index.StateBegun, Blocking: true, UnknownOf: in.RunID, Interrupted: string(b)}
	if err := p.ix.Replace(ctx, &old, nr, now); err != nil {
		return p.internal(err, "the record could not be written")
	}
	args, err := p.recordedArgs(ctx, in.RunID, in.StepID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	rc := *c
	rc.args = args
	return p.fresh(ctx, &rc, nr)
}

// recordedArgs are the arguments a step recorded: what a re-run runs.
func (p *Proxy) recordedArgs(ctx context.Context, runID, stepID string) (json.RawMessage, error) {
	st, err := p.stepOf(ctx, runID, stepID)
	if err != nil {
		return nil, err
	}
	if st.Decision == nil || st.Decision.Kind != agentrt.KindToolCall {
		return nil, fmt.Errorf("step %s of run %s is not a tool call", stepID, runID)
	}
	return st.Decision.Args, nil
}

// reask asks again about a call whose outcome stays unknown: its question
// expired, or was rejected and the repeat window has passed.
func (p *Proxy) reask(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	var in interruption
	if err := json.Unmarshal([]byte(r.Interrupted), &in); err != nil || in.RunID == "" {
		// The row asked about its own run (cut off under the proxy):
		// find its interruption in its approval.
		as, err := p.store.ListApprovals(ctx, r.RunID)
		if err != nil || len(as) == 0 {
			return p.internal(fmt.Errorf("no interruption recorded for run %s: %v", r.RunID, err), "the record is not understood")
		}
		var cp capability
		if err := json.Unmarshal(as[len(as)-1].Capability, &cp); err != nil || cp.Interrupted == nil {
			return p.internal(fmt.Errorf("no interruption recorded for run %s", r.RunID), "the record is not understood")
		}
		in = *cp.Interrupted
	}
	return p.askUnknown(ctx, c, r, in)
}

// askAgain asks again about a blocking row whose question expired, so the
// tool is never blocked with nothing for an operator to act on. It waits
// for nothing.
func (p *Proxy) askAgain(ctx context.Context, b *index.Row) {
	t := p.tools[b.Tool]
	if t == nil {
		return
	}
	c := &call{t: t, key: b.Key}
	if _, again := p.collect(ctx, c, b); again {
		return
	}
}

// settle writes a row's outcome and answers a. A row stays open while it
// answers identical calls: an executed mutating call, a rejected or
// expired one, for the repeat window; an outcome that stays unknown until
// it is asked again.
func (p *Proxy) settle(ctx context.Context, c *call, r *index.Row, o CallOutcome, detail string, a answer) (answer, bool) {
	now := p.now()
	w := c.t.window
	open := false
	switch {
	case o.StaysUnknown():
		open = true
	case o.Executed() && c.t.mutating(), o == OutcomeRejected, o == OutcomeExpired:
		open = w > 0
	}
	change := func(n *index.Row) {
		n.State, n.Outcome, n.Detail, n.SettledAt, n.Blocking = index.StateDone, o, trace.Truncate(detail, reply.BoundReason), now, false
		n.Open = open
		if open {
			n.OpenUntil = now.Add(w)
		} else {
			n.ClosedAt = now
		}
	}
	if r.ID == 0 {
		// A row never claimed (an allowed read): recorded closed, later.
		n := *r
		change(&n)
		n.Open, n.OpenUntil, n.ClosedAt = false, time.Time{}, now
		p.ix.InsertLater(&n)
		return a, false
	}
	_, err := p.ix.Set(ctx, r, change)
	if err != nil {
		if errors.Is(err, index.ErrStale) {
			// Settled by someone else first; what they settled answers.
			return answer{}, true
		}
		return p.internal(err, "the record could not be written")
	}
	return a, false
}

// closeRun ends a run left RUNNING after its one call: one call per run.
func (p *Proxy) closeRun(ctx context.Context, gs *agentrt.GateSession, why string) {
	if gs == nil || gs.Done() {
		return
	}
	st, err := gs.Step(context.WithoutCancel(ctx))
	if err != nil || st == nil {
		return
	}
	_, _ = st.Propose(context.WithoutCancel(ctx), agentrt.Decision{Kind: agentrt.KindFail, Message: "one call per run: " + why})
}

// settleRecord settles a row whose run ended, from the run's record: what
// the proxy would have settled had it not stopped first.
func (p *Proxy) settleRecord(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	run, err := p.store.GetRun(ctx, r.RunID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	steps, err := p.store.ListSteps(ctx, r.RunID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	as, err := p.store.ListApprovals(ctx, r.RunID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	var last *agentrt.Approval
	if len(as) > 0 {
		last = &as[len(as)-1]
	}
	unknownLine := r.Interrupted != "" || (last != nil && last.Kind == agentrt.InterruptedSideEffect)
	if st := executedStep(steps); st != nil {
		return p.executed(ctx, c, r, nil, st.ID, *st.Observation, false)
	}
	switch run.Reason {
	case agentrt.ReasonApprovalRejected:
		note := ""
		if last != nil {
			note = last.Note
		}
		if unknownLine {
			return p.settle(ctx, c, r, OutcomeUnknownRejected, note, reply.Rejected(note, c.t.window))
		}
		return p.settle(ctx, c, r, OutcomeRejected, note, reply.Rejected(note, c.t.window))
	case agentrt.ReasonApprovalExpired:
		if unknownLine {
			return p.reask(ctx, c, r)
		}
		return p.settle(ctx, c, r, OutcomeExpired, "", reply.Expired())
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if o := steps[i].Observation; o != nil && steps[i].Decision != nil && steps[i].Decision.Kind == agentrt.KindToolCall {
			switch o.Kind {
			case agentrt.ObsInvalidDecision:
				return p.settle(ctx, c, r, OutcomeInvalid, o.Summary, reply.Invalid(o.Summary))
			case agentrt.ObsPolicyDenied:
				return p.settle(ctx, c, r, OutcomeDenied, o.Summary, reply.Denied(o.Summary))
			}
		}
	}
	if unknownLine {
		// An operator moved a question about an unknown outcome on: ask
		// again rather than forget it.
		return p.reask(ctx, c, r)
	}
	return p.settle(ctx, c, r, OutcomeNotExecuted, string(run.Reason), reply.Unavailable("it was ended before it ran; call again"))
}
