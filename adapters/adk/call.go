package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt"
)

// call is one ADK tool call as the gate sees it.
type call struct {
	run, id, tool string
	args          json.RawMessage
	body          agentrt.ToolBody
	join          func() // waits for the turn's other calls to open their steps
}

// call settles c: its observation, or in interrupt mode the approval it
// waits on. Each pass reads what the run recorded of c's request first, so
// a call ADK makes again (a resume, a restart) is never run twice.
func (gv *governor) call(ctx context.Context, c call) (agentrt.Observation, *agentrt.Approval, error) {
	key, err := agentrt.RequestKey(c.tool, c.args)
	if err != nil {
		return agentrt.Observation{}, nil, err
	}
	rs := gv.run(c.run)
	for pass := 0; ; pass++ {
		if pass == maxPasses {
			return agentrt.Observation{}, nil, fmt.Errorf("agentrt: call %s of run %s was not settled after %d reads of the run", c.id, c.run, pass)
		}
		waitOn, err := gv.ensure(ctx, rs, c.run)
		if err != nil {
			return agentrt.Observation{}, nil, err
		}
		rec, err := gv.earlier(ctx, c, key)
		switch {
		case err != nil:
			return agentrt.Observation{}, nil, err
		case rec == nil && waitOn != nil:
			// The run waits on another call's approval: nothing new starts.
			if gv.opts.Interrupt {
				return agentrt.Observation{}, nil, fmt.Errorf("agentrt: run %s waits on approval %s; no other call may start until it is decided", c.run, waitOn.ID)
			}
			err = gv.await(ctx, rs, c, "", waitOn)
		case rec == nil:
			return gv.propose(ctx, rs, c)
		case rec.Step.Observation != nil && rec.Step.Status != agentrt.StepInterrupted:
			return *rec.Step.Observation, nil, nil
		case rec.Approval == nil:
			return agentrt.Observation{}, nil, fmt.Errorf("agentrt: call %s of run %s is %s elsewhere", c.id, c.run, rec.Step.Status)
		case rec.Approval.Status == agentrt.ApprovalPending && gv.opts.Interrupt:
			return agentrt.Observation{}, rec.Approval, nil
		case rec.Approval.Status == agentrt.ApprovalPending:
			err = gv.await(ctx, rs, c, rec.Step.ID, rec.Approval)
		case rec.Approval.Status == agentrt.ApprovalApproved:
			if obs, mine, err := gv.grant(ctx, rs, rec.Step.ID, c.body); mine || err != nil {
				return obs, nil, err
			}
		default:
			return agentrt.Observation{}, nil, fmt.Errorf("agentrt: approval %s was %s %s", rec.Approval.ID, rec.Approval.Status, rec.Approval.Note)
		}
		if err != nil && !errors.Is(err, agentrt.ErrApprovalExpired) {
			return agentrt.Observation{}, nil, err
		}
	}
}

// maxPasses bounds how often one call reads its run again: each pass
// waits for a decision or executes a grant, so a few suffice.
const maxPasses = 16

// earlier is the newest record of c's request in c's run that c must
// collect: its own call's, or one still waiting for or holding a grant
// (a restarted session proposing the identical request).
func (gv *governor) earlier(ctx context.Context, c call, key string) (*agentrt.RequestRecord, error) {
	recs, err := gv.g.Lookup(ctx, key, agentrt.MaxLookup)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		r := &recs[i]
		if r.Step.RunID != c.run {
			continue
		}
		open := r.Approval != nil && r.Approval.Status != agentrt.ApprovalRejected && r.Step.Status != agentrt.StepDone && r.Step.Status != agentrt.StepFailed
		if (r.Step.Decision != nil && r.Step.Decision.CallID == c.id) || open {
			return r, nil
		}
		return nil, nil
	}
	return nil, nil
}

// ensure holds a session on the run when one can be had: it begins the
// run or attaches it (which marks a call cut off by a crash). It returns
// the approval the run waits on, if it waits.
func (gv *governor) ensure(ctx context.Context, rs *runState, run string) (*agentrt.Approval, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.gs != nil && !rs.gs.Done() {
		return nil, nil
	}
	gs, v, err := gv.g.BeginOrAttach(ctx, run, "ADK session "+run, gv.opts.Limits)
	switch {
	case errors.Is(err, agentrt.ErrRunEnded) || v.Outcome == agentrt.VerdictEnded:
		return nil, errEnded
	case err != nil:
		return nil, err
	}
	rs.gs, rs.granted = gs, nil
	if v.Outcome == agentrt.VerdictAllowed {
		rs.granted = gs.Current()
	}
	return v.Approval, nil
}

// propose opens a step for c and, when the policy allows it, runs c's
// tool through the gate.
func (gv *governor) propose(ctx context.Context, rs *runState, c call) (agentrt.Observation, *agentrt.Approval, error) {
	rs.mu.Lock()
	gs, granted := rs.gs, rs.granted
	rs.mu.Unlock()
	if granted != nil {
		if _, _, err := gv.grant(ctx, rs, granted.ID(), nil); err != nil {
			return agentrt.Observation{}, nil, err
		}
		return gv.call(ctx, c)
	}
	step, err := gs.Step(ctx)
	c.join()
	if err != nil || step == nil {
		return agentrt.Observation{}, nil, errors.Join(errEnded, err)
	}
	v, err := step.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, CallID: c.id, Tool: c.tool, Args: c.args})
	switch {
	case err != nil:
		return agentrt.Observation{}, nil, err
	case v.Outcome == agentrt.VerdictAllowed:
		obs, err := step.ExecuteFunc(ctx, c.body)
		return obs, nil, err
	case v.Outcome == agentrt.VerdictDenied:
		return *v.Observation, nil, nil
	case v.Outcome == agentrt.VerdictPending:
		return gv.call(ctx, c)
	}
	return agentrt.Observation{}, nil, errEnded
}

// await waits for a, with c's body on offer for its step, so whichever
// call of this process attaches the granted step can run it.
func (gv *governor) await(ctx context.Context, rs *runState, c call, stepID string, a *agentrt.Approval) error {
	if stepID != "" {
		rs.mu.Lock()
		rs.bodies[stepID] = c.body
		rs.mu.Unlock()
		defer func() { rs.mu.Lock(); delete(rs.bodies, stepID); rs.mu.Unlock() }()
	}
	_, err := gv.g.Await(ctx, c.run, a.ID)
	return err
}

// grant executes the granted step the run's session holds, with body when
// it is stepID's and otherwise with the body a waiting call offered. It
// reports whether the step executed was stepID.
func (gv *governor) grant(ctx context.Context, rs *runState, stepID string, body agentrt.ToolBody) (agentrt.Observation, bool, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	o := rs.granted
	if o == nil {
		return agentrt.Observation{}, false, nil // another call ran it; read the record again
	}
	mine := o.ID() == stepID && body != nil
	if !mine {
		body = rs.bodies[o.ID()]
	}
	if body == nil {
		return agentrt.Observation{}, false, fmt.Errorf("agentrt: run %s must first run its granted step %d, which no call in this process holds", o.Step().RunID, o.Index())
	}
	rs.granted = nil
	obs, err := o.ExecuteFunc(ctx, body)
	return obs, mine, err
}
