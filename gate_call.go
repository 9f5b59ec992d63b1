package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Call is one tool call of a framework's loop, as its adapter hands it to
// Gate.Call.
type Call struct {
	// RunID is the framework's durable key for the run; the run is begun
	// when none has the id. Required.
	RunID string
	// Goal is recorded on a run Call begins; "" means "framework run".
	Goal string
	// Limits bound a run Call begins; zero means FrameworkLimits().
	Limits Limits
	// CallID is the framework's id for the call (Decision.CallID): a call
	// made again with the same id collects what its run recorded for it.
	CallID string
	// Tool and Args are the request; Args is JSON (empty means {}).
	Tool string
	Args json.RawMessage
	// Body is the framework's own tool. Call runs it through
	// OpenStep.ExecuteFunc: at most once, with the recorded arguments,
	// after its start is durable. Required.
	Body ToolBody
	// NoWait returns an approval that is still pending in
	// CallResult.Pending (for a framework's interrupt) instead of awaiting
	// it, and refuses a call whose run waits on another call's approval.
	NoWait bool
	// TurnWait bounds how long a call that is not read-only waits for the
	// other calls of its turn (Gate.Turn) to open their steps before it is
	// proposed. Zero means DefaultTurnWait; negative means no wait (a
	// framework that runs a turn's calls one after another).
	TurnWait time.Duration
}

// CallResult is what Gate.Call came to.
type CallResult struct {
	// Observation is the call's recorded outcome, what the model reads:
	// the tool's result or error, or a denial. Zero when Pending is set.
	Observation Observation
	// Pending is the approval the call waits on (Call.NoWait only).
	Pending *Approval
	// RunID and StepID name the step that answered: the call's own, or an
	// identical request's in another run that the call collected.
	RunID, StepID string
}

// maxCallPasses bounds how often one Call reads its request's record
// again: each pass waits for a decision, attaches the run or executes, so
// a few suffice.
const maxCallPasses = 16

// Call governs one tool call of a loop the runtime does not own (a
// framework's pre-tool hook): it holds a session on c.RunID (beginning or
// attaching the run), reads what the record holds for the request first,
// and only then proposes. So:
//
//   - a call made again (same CallID, same request) collects its recorded
//     outcome and never runs twice; one cut off by a crash waits for the
//     one approval that says so, and runs once when it is granted;
//   - an identical request that is not read-only collects a pending or
//     granted approval of any run instead of asking again (a framework
//     session restarted under a new id), and runs in that approval's run;
//   - a new request is proposed; allowed, Body runs through ExecuteFunc;
//     denied, the denial is the Observation; pending, Call awaits the
//     decision (or returns it, with NoWait) and, granted, runs Body once.
//
// Calls of one run may come from several goroutines at once: each opens
// its own step, and siblings' writes share commits. A call that waits for
// an operator holds only itself. Call refuses with a *CallRefusedError
// (ErrCallRefused) what it neither ran nor found recorded: a rejected or
// expired approval, a run waiting on another call, a run that ended
// (matching ErrRunEnded too). Other errors are the store's or ctx's. The
// session is kept while calls come and closed DefaultCallIdle after the
// last one; Gate.Close closes it at once.
func (g *Gate) Call(ctx context.Context, c Call) (CallResult, error) {
	if c.RunID == "" || c.Tool == "" || c.Body == nil {
		return CallResult{}, fmt.Errorf("%w: Gate.Call needs a RunID, a Tool and a Body", ErrInvalidConfig)
	}
	defer g.arrive(c.RunID, c.CallID)
	if len(c.Args) == 0 {
		c.Args = json.RawMessage("{}")
	}
	key, err := RequestKey(c.Tool, c.Args)
	if err != nil {
		return CallResult{}, err
	}
	var waited []waitMark
	defer func() { g.unmark(waited) }()
	for range maxCallPasses {
		rec, err := g.recorded(ctx, c, key)
		if err != nil {
			return CallResult{}, err
		}
		var res CallResult
		var done bool
		if rec == nil {
			res, done, err = g.propose(ctx, c, &waited)
		} else {
			res, done, err = g.collect(ctx, c, *rec, &waited)
		}
		if done || err != nil {
			return res, err
		}
	}
	return CallResult{}, fmt.Errorf("agentrt: call %s of run %s was not settled after %d reads of its record", c.CallID, c.RunID, maxCallPasses)
}

// recorded is the record c must collect: its own call's newest step in
// its run, or else (for a tool that is not read-only) the newest step of
// the identical request in any run that awaits a pending or granted
// approval.
func (g *Gate) recorded(ctx context.Context, c Call, key string) (*RequestRecord, error) {
	recs, err := g.Lookup(ctx, key, 0)
	if err != nil {
		return nil, err
	}
	var other *RequestRecord
	for i := range recs {
		r := &recs[i]
		if c.CallID != "" && r.Step.RunID == c.RunID && r.Step.Decision != nil && r.Step.Decision.CallID == c.CallID {
			return r, nil
		}
		if other == nil && !g.readOnly(c.Tool) && r.Step.Status == StepAwaitingApproval && r.Approval != nil &&
			(r.Approval.Status == ApprovalPending || r.Approval.Status == ApprovalApproved) {
			other = r
		}
	}
	return other, nil
}

func (g *Gate) readOnly(tool string) bool {
	t := g.e.tools[tool]
	return t != nil && t.spec.SideEffect == ReadOnly
}

// collect settles c from rec. done false means: read the record again.
func (g *Gate) collect(ctx context.Context, c Call, rec RequestRecord, waited *[]waitMark) (CallResult, bool, error) {
	st, a := rec.Step, rec.Approval
	switch {
	case a != nil && st.Status == StepAwaitingApproval:
		return g.approval(ctx, c, st, *a, waited)
	case st.Status.InFlight():
		// Cut off by a crash: attaching marks it interrupted and asks an
		// operator. In flight under a session of this process, it runs.
		h := g.hold(st.RunID)
		defer g.release(h)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.gs != nil && !h.gs.Done() {
			return CallResult{}, true, refuse(c, st.RunID, nil, "the call is in flight in another call of this process")
		}
		_, _, err := g.session(ctx, h, c)
		return CallResult{}, false, err
	case st.Observation == nil || st.Status == StepInterrupted:
		// An interrupted read, continued: propose it again.
		return g.propose(ctx, c, waited)
	}
	return CallResult{Observation: *st.Observation, RunID: st.RunID, StepID: st.ID}, true, nil
}

// approval settles c on step st awaiting approval a.
func (g *Gate) approval(ctx context.Context, c Call, st Step, a Approval, waited *[]waitMark) (CallResult, bool, error) {
	switch {
	case a.Status == ApprovalPending && c.NoWait:
		return CallResult{Pending: &a, RunID: st.RunID, StepID: st.ID}, true, nil
	case a.Status == ApprovalPending:
		*waited = append(*waited, g.mark(st.RunID, st.ID))
		got, err := g.Await(ctx, st.RunID, a.ID)
		switch {
		case ctx.Err() != nil:
			return CallResult{}, true, ctx.Err()
		case errors.Is(err, ErrApprovalExpired):
			return CallResult{}, false, nil
		case err != nil:
			return CallResult{}, true, err
		case got.Status != ApprovalApproved:
			return CallResult{}, true, refuse(c, st.RunID, nil, fmt.Sprintf("approval %s was %s %s", a.ID, got.Status, got.Note))
		}
		return CallResult{}, false, nil
	case a.Status == ApprovalApproved:
		return g.grant(ctx, c, st)
	}
	return CallResult{}, true, refuse(c, st.RunID, nil, fmt.Sprintf("approval %s was %s %s", a.ID, a.Status, a.Note))
}

// grant executes the approved step st with c's body, once Attach opened it
// in this process. Another step's grant opened first is left to the call
// of this process that waits for it.
func (g *Gate) grant(ctx context.Context, c Call, st Step) (CallResult, bool, error) {
	h := g.hold(st.RunID)
	defer g.release(h)
	h.mu.Lock()
	for {
		if _, _, err := g.session(ctx, h, c); err != nil {
			h.mu.Unlock()
			return CallResult{}, errors.Is(err, ErrCallRefused), err
		}
		o := h.granted
		if o == nil {
			h.mu.Unlock()
			return CallResult{}, false, nil // not granted here: read the record again
		}
		if o.ID() == st.ID {
			h.granted = nil
			h.mu.Unlock()
			obs, err := o.ExecuteFunc(ctx, c.Body)
			g.changed(h)
			return CallResult{Observation: obs, RunID: st.RunID, StepID: st.ID}, true, err
		}
		if err := g.awaitGrant(ctx, h, c); err != nil {
			h.mu.Unlock()
			return CallResult{}, true, err
		}
	}
}

// propose opens a step for c in its run and proposes it.
func (g *Gate) propose(ctx context.Context, c Call, waited *[]waitMark) (CallResult, bool, error) {
	h := g.hold(c.RunID)
	defer g.release(h)
	h.mu.Lock()
	gs, waitOn, err := g.session(ctx, h, c)
	for err == nil && h.granted != nil {
		err = g.awaitGrant(ctx, h, c)
		if err == nil {
			gs, waitOn, err = g.session(ctx, h, c)
		}
	}
	h.mu.Unlock()
	switch {
	case err != nil:
		return CallResult{}, true, err
	case waitOn != nil && c.NoWait:
		return CallResult{}, true, refuse(c, c.RunID, nil, fmt.Sprintf("the run waits on approval %s of another call; nothing else runs until an operator decides it", waitOn.ID))
	case waitOn != nil:
		if _, err := g.Await(ctx, c.RunID, waitOn.ID); err != nil && !errors.Is(err, ErrApprovalExpired) {
			return CallResult{}, true, err
		}
		return CallResult{}, false, nil
	}
	o, v, err := g.open(ctx, gs, c)
	return g.proposed(ctx, c, h, gs, o, v, err, waited)
}

// proposed settles c from what proposing it in session gs came to.
func (g *Gate) proposed(ctx context.Context, c Call, h *callHold, gs *GateSession, o *OpenStep, v Verdict, err error, waited *[]waitMark) (CallResult, bool, error) {
	switch {
	case err != nil && gs.Done():
		return CallResult{}, false, nil // the session ended meanwhile: read the record again
	case err != nil:
		return CallResult{}, true, err
	case o == nil:
		return CallResult{}, true, refuse(c, c.RunID, ErrRunEnded, "the run ended: "+string(gs.Run().Status))
	case v.Outcome == VerdictAllowed:
		obs, err := o.ExecuteFunc(ctx, c.Body)
		g.changed(h)
		return CallResult{Observation: obs, RunID: c.RunID, StepID: o.ID()}, true, err
	case v.Outcome == VerdictDenied:
		return CallResult{Observation: *v.Observation, RunID: c.RunID, StepID: o.ID()}, true, nil
	case v.Outcome == VerdictPending:
		return g.approval(ctx, c, o.Step(), *v.Approval, waited)
	}
	return CallResult{}, true, refuse(c, c.RunID, ErrRunEnded, "the run ended: "+string(v.Run.Status))
}

func (c Call) decision() Decision {
	return Decision{Kind: KindToolCall, CallID: c.CallID, Tool: c.Tool, Args: c.Args}
}

// open opens c's step and proposes c in it. A call that waits for its
// turn's siblings (Gate.Turn) opens its step first and is proposed once
// they opened theirs; any other is opened and proposed in one
// (GateSession.Propose), so an allowed call commits twice: its opening
// with the decision, the policy's and the tool start, then its outcome.
func (g *Gate) open(ctx context.Context, gs *GateSession, c Call) (*OpenStep, Verdict, error) {
	d := c.decision()
	if !g.waitsForTurn(c) {
		o, v, err := gs.Propose(ctx, d)
		g.arrive(c.RunID, c.CallID)
		return o, v, err
	}
	o, err := gs.Step(ctx)
	if err != nil || o == nil {
		return nil, Verdict{}, err
	}
	g.join(c)
	v, err := o.Propose(ctx, d)
	if err != nil {
		return nil, Verdict{}, err
	}
	return o, v, nil
}

func refuse(c Call, runID string, err error, reason string) error {
	return &CallRefusedError{RunID: runID, CallID: c.CallID, Reason: reason, Err: err}
}
