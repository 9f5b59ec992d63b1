package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/compose"
)

// call governs one tool call. run is the framework's own tool; it runs
// only through ExecuteFunc, so at most once and after its start is
// recorded. What the model reads comes back as text: the tool's own result
// (or error, as Eino would have had it), or a substitute saying why not.
func (m *Guard) call(ctx context.Context, in *compose.ToolInput, run func(context.Context, *compose.ToolInput) (string, error)) (string, error) {
	runID := runIDFrom(ctx)
	if runID == "" {
		return "", errors.New("agentrt/eino: the call has no run id: start the run with eino.RunOptions(id)... or a context from eino.WithRunID")
	}
	var ran bool
	var text string
	var toolErr error
	body := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		c := *in
		c.Arguments, ran = string(args), true
		if text, toolErr = run(ctx, &c); toolErr != nil {
			return nil, toolErr
		}
		return json.Marshal(text)
	}
	d := agentrt.Decision{Kind: agentrt.KindToolCall, CallID: in.CallID, Tool: in.Name, Args: json.RawMessage(in.Arguments)}
	res, err := m.decide(ctx, runID, d, body, true)
	if ran {
		return text, toolErr
	}
	return res, err
}

// decide proposes d in run runID (or collects the same request's earlier
// step) until the call ran, was refused, or the caller's ctx ended.
func (m *Guard) decide(ctx context.Context, runID string, d agentrt.Decision, body agentrt.ToolBody, collect bool) (string, error) {
	key, _ := agentrt.RequestKey(d.Tool, d.Args)
	rs := m.state(runID)
	for {
		rs.mu.Lock()
		gs, a, err := m.session(ctx, rs, runID)
		if err != nil {
			rs.mu.Unlock()
			return refusal(ctx, err)
		}
		if a != nil {
			rs.mu.Unlock()
			if text, err, again := m.wait(ctx, runID, d, a); !again {
				return text, err
			}
			continue
		}
		// Re-dispatched after an approval, an interrupt or a restart: the
		// recorded step answers, never the framework's resume data.
		if o, ok := gs.StepByCallID(d.CallID); ok && key != "" && stepKey(o.Step()) == key {
			if st := o.Step(); st.Status != agentrt.StepAwaitingApproval {
				rs.mu.Unlock()
				return recorded(st), nil
			}
			rs.mu.Unlock()
			obs, err := o.ExecuteFunc(ctx, body)
			m.ended(rs)
			if err == nil {
				return content(obs), nil
			}
			if a := m.approvalOf(ctx, key, o.ID()); a != nil {
				if text, err, again := m.wait(ctx, runID, d, a); !again {
					return text, err
				}
			}
			continue
		}
		if collect && key != "" && m.classes[d.Tool] != agentrt.ReadOnly {
			if other, callID := m.earlier(ctx, runID, key); other != "" {
				rs.mu.Unlock()
				d.CallID = callID
				return m.decide(ctx, other, d, body, false)
			}
		}
		o, err := gs.Step(ctx)
		if err != nil && !gs.Done() {
			// An approved step opened by Attach must run first: its own
			// call takes it.
			ch := rs.changed
			rs.mu.Unlock()
			if err := waitFor(ctx, ch); err != nil {
				return "", err
			}
			continue
		}
		rs.mu.Unlock()
		if err != nil {
			continue
		}
		if o == nil {
			return refusal(ctx, fmt.Errorf("agentrt/eino: run %s ended", runID))
		}
		text, a, done := m.propose(ctx, rs, o, d, body)
		if done {
			return text, nil
		}
		if a != nil {
			if text, err, again := m.wait(ctx, runID, d, a); !again {
				return text, err
			}
		}
	}
}

// propose proposes d on o and runs it if allowed; done is false when the
// call must be decided again: it waits on the approval returned, or the
// session ended.
func (m *Guard) propose(ctx context.Context, rs *runState, o *agentrt.OpenStep, d agentrt.Decision, body agentrt.ToolBody) (string, *agentrt.Approval, bool) {
	v, err := o.Propose(ctx, d)
	switch {
	case err != nil:
		return "", nil, false
	case v.Outcome == agentrt.VerdictPending:
		return "", v.Approval, false
	case v.Outcome == agentrt.VerdictDenied:
		return recorded(o.Step()), nil, true
	case v.Outcome == agentrt.VerdictEnded:
		return substitute("the run ended: " + string(v.Run.Status)), nil, true
	}
	obs, err := o.ExecuteFunc(ctx, body)
	m.ended(rs)
	if err != nil {
		return "", nil, false
	}
	return content(obs), nil, true
}

// approvalOf is the latest approval of step stepID, found by its request.
func (m *Guard) approvalOf(ctx context.Context, key, stepID string) *agentrt.Approval {
	recs, _ := m.g.Lookup(ctx, key, 10)
	for _, r := range recs {
		if r.Step.ID == stepID && r.Approval != nil {
			return r.Approval
		}
	}
	return nil
}

func (m *Guard) ended(rs *runState) {
	rs.mu.Lock()
	rs.signal()
	rs.mu.Unlock()
}

// wait handles a pending approval: an interrupt, or Await and then again.
func (m *Guard) wait(ctx context.Context, runID string, d agentrt.Decision, a *agentrt.Approval) (string, error, bool) {
	if m.opts.Interrupt {
		p := Pending{RunID: runID, ApprovalID: a.ID, Tool: d.Tool, CallID: d.CallID}
		return "", compose.StatefulInterrupt(ctx, p, a.ID), false
	}
	got, err := m.g.Await(ctx, runID, a.ID)
	if ctx.Err() != nil {
		return "", ctx.Err(), false
	}
	if err != nil || got.Status != agentrt.ApprovalApproved {
		text, _ := refusal(ctx, fmt.Errorf("approval %s is %s: %s %s", a.ID, got.Status, got.DecidedBy, got.Note))
		return text, nil, false
	}
	return "", nil, true
}

// earlier finds another run's step of the same request that still awaits
// an undecided or granted approval: a restarted session collects it.
func (m *Guard) earlier(ctx context.Context, runID, key string) (string, string) {
	recs, err := m.g.Lookup(ctx, key, 10)
	if err != nil {
		return "", ""
	}
	for _, r := range recs {
		if r.Step.RunID != runID && r.Step.Status == agentrt.StepAwaitingApproval && r.Approval != nil &&
			(r.Approval.Status == agentrt.ApprovalPending || r.Approval.Status == agentrt.ApprovalApproved) {
			return r.Step.RunID, r.Step.Decision.CallID
		}
	}
	return "", ""
}

func waitFor(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}

func stepKey(st agentrt.Step) string {
	if st.Decision == nil {
		return ""
	}
	k, _ := agentrt.RequestKey(st.Decision.Tool, st.Decision.Args)
	return k
}

// recorded is what the model reads of a step that already ended.
func recorded(st agentrt.Step) string {
	if st.Observation == nil {
		return substitute("the call was not run (" + string(st.Status) + ")")
	}
	if !st.Observation.Failure() {
		return content(*st.Observation)
	}
	msg := string(st.Observation.Kind)
	for _, s := range []string{st.Observation.Summary, st.Observation.FailureMessage} {
		if s != "" {
			msg += ": " + s
		}
	}
	return substitute(msg)
}

// content is a recorded tool result as the tool returned it.
func content(obs agentrt.Observation) string {
	var s string
	if json.Unmarshal(obs.Content, &s) == nil {
		return s
	}
	return string(obs.Content)
}

// refusal is what the model reads for err; a cancelled ctx is an error.
func refusal(ctx context.Context, err error) (string, error) {
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return substitute(err.Error()), nil
}

func substitute(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": "agentrt: " + msg})
	return string(b)
}
