package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/proxy/internal/mcp2026"
	"github.com/agentrt/agentrt/proxy/internal/reply"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/trace"
)

// gateStore is the store the gate writes through: the proxy's own, or in
// a test one that counts its commits.
var gateStore = func(st agentrt.Store) agentrt.Store { return st }

// call is one host call being handled.
type call struct {
	t    *ptool
	args json.RawMessage // as the host sent them
	key  string
	// hold is how long this call may wait for a decision.
	hold time.Duration
	// progress, when set, sends one progress notification.
	progress func(msg string)
	// outcome is the policy's preview of the call (gatePolicy.preview).
	outcome agentrt.PolicyOutcome
}

// serverUnreachable is all the model is told of a server that needs the
// operator (a new login).
const serverUnreachable = "the server cannot be reached now"

// maxAttempts bounds how often one call is matched again after a row or
// run changed under it (another proxy on the same index, an operator).
const maxAttempts = 8

// serveCall is the host's way into a call of t: the MCP tool handler the
// proxy's server registers. A 2026-07-28 request goes through callNew (its
// requestState, its task handle); every other through handle.
func (p *Proxy) serveCall(t *ptool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p.inflight.Add(1)
		defer p.inflight.Done()
		p.callers.Enter(t.server, req.Session)
		defer p.callers.Leave(t.server, req.Session)
		ctx = withTraceContext(ctx, req)
		if mcp2026.New(mcp2026.Of(req)) {
			return p.callNew(ctx, t, req)
		}
		return p.handle(ctx, t, req).Result(), nil
	}
}

// withTraceContext gives ctx the W3C trace context a request carries in
// its _meta (traceparent, tracestate), so the run the call begins records
// it and an export makes the run a child of the host's trace. A
// traceparent that is not well formed is ignored, as W3C Trace Context
// says a receiver does.
func withTraceContext(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	m := req.Params.GetMeta()
	parent, _ := m["traceparent"].(string)
	if parent == "" {
		return ctx
	}
	state, _ := m["tracestate"].(string)
	tc, err := agentrt.ParseTraceContext(parent, state)
	if err != nil {
		return ctx
	}
	return agentrt.WithTraceContext(ctx, tc)
}

// handle answers one host call of a proxied tool.
func (p *Proxy) handle(ctx context.Context, t *ptool, req *sdk.CallToolRequest) answer {
	c := &call{t: t, args: req.Params.Arguments, hold: p.cfg.Hold}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		var mu sync.Mutex
		n := 0
		c.progress = func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			n++
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: msg})
		}
		// The server's own progress follows the hold's, offset so the
		// host sees it rise, its message escaped.
		ctx = mcp.WithProgress(ctx, func(pp *sdk.ProgressNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			out := &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n) + pp.Progress, Message: reply.Quote(pp.Message, reply.BoundReason)}
			if pp.Total > 0 {
				out.Total = float64(n) + pp.Total
			}
			_ = req.Session.NotifyProgress(ctx, out)
		})
	}
	return p.callTool(ctx, c)
}

func (p *Proxy) callTool(ctx context.Context, c *call) answer {
	if !c.t.up.ready(ctx, c.t.upstream) {
		// How to fix it is the operator's, on stderr; the model learns
		// only that the call did not run.
		return reply.Unavailable(serverUnreachable)
	}
	if len(bytes.TrimSpace(c.args)) == 0 {
		c.args = json.RawMessage("{}")
	}
	canon, err := agentrt.CanonicalJSON(c.args)
	if err != nil {
		return p.refusedJSON(ctx, c)
	}
	// The public request key (agentrt.RequestKey): the Gate's Lookup and
	// the framework adapters find the same calls by it.
	c.key, err = agentrt.RequestKey(c.t.name, canon)
	if err != nil {
		return p.refusedJSON(ctx, c)
	}
	c.outcome = p.policy.preview(ctx, c.t, canon, p.limits())
	if !c.t.mutating() && c.outcome == agentrt.Allow {
		// An allowed read has nothing to match: no approval to collect, no
		// repeat to refuse, no block. It runs at once, and its row is
		// written for the status tool after the answer, off its path.
		r := &index.Row{Session: p.cfg.Session, Key: c.key, Tool: c.t.name, SideEffect: c.t.spec.SideEffect, RunID: p.newRunID(),
			CreatedAt: p.now(), State: index.StateBegun}
		a, again := p.fresh(ctx, c, r)
		if again {
			return reply.Unavailable("it could not be recorded; call again")
		}
		return a
	}
	if c.t.mutating() {
		// A call to this tool cut off under a lapsed lease blocks it
		// before this one is matched.
		p.sweepLapsed(ctx, c.t.name)
	}
	for range maxAttempts {
		a, again := p.attempt(ctx, c)
		if !again {
			return a
		}
	}
	p.logf("agentrt-proxy: a call to %s changed under it %d times; answered UNAVAILABLE", reply.Quote(c.t.name, reply.BoundName), maxAttempts)
	return reply.Unavailable("it kept changing while being matched; call again")
}

// claim is what the index said about a call.
type claim struct {
	row     *index.Row // the open row: new (fresh) or existing
	fresh   bool
	blocked *index.Row // a row whose unknown outcome blocks the tool
	reask   bool       // blocked's question must be asked again first
	capped  int        // open approvals, when the cap refused a new one
}

// attempt matches the call once; again asks for another match because
// something changed under it.
func (p *Proxy) attempt(ctx context.Context, c *call) (answer, bool) {
	cl, err := p.claim(ctx, c)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	switch {
	case cl.blocked != nil:
		if cl.reask {
			p.askAgain(ctx, cl.blocked)
		}
		return reply.BlockedByUnknown(), false
	case cl.capped > 0:
		return reply.BlockedByCap(cl.capped), false
	case cl.fresh:
		return p.fresh(ctx, c, cl.row)
	}
	return p.existing(ctx, c, cl.row)
}

// internal logs an error the model must not see and answers UNAVAILABLE.
func (p *Proxy) internal(err error, why string) (answer, bool) {
	if errors.Is(err, index.ErrStale) {
		return answer{}, true
	}
	p.logf("agentrt-proxy: %s: %s", why, trace.Sanitize(err.Error()))
	return reply.Unavailable(why), false
}

// claim finds the open row of the call's key, closing one whose repeat
// window has passed; or, for a new call, checks the blocks and inserts a
// row under a new run id. One index transaction.
func (p *Proxy) claim(ctx context.Context, c *call) (claim, error) {
	now := p.now()
	var out claim
	needsApproval := c.outcome == agentrt.RequireApproval
	err := p.ix.Update(ctx, func(tx *index.Tx) error {
		out = claim{}
		r, err := tx.OpenRow(p.cfg.Session, c.key)
		if err != nil {
			return err
		}
		if r != nil && r.State == index.StateDone && !r.Outcome.StaysUnknown() && !now.Before(r.OpenUntil) {
			closed := *r
			closed.Open, closed.ClosedAt = false, now
			if err := tx.CAS(&closed, r.State); err != nil {
				return err
			}
			r = nil
		}
		if r != nil {
			out.row = r
			return nil
		}
		if c.t.mutating() {
			b, reask, err := p.blocker(ctx, tx, c, now)
			if err != nil {
				return err
			}
			if b != nil {
				out.blocked, out.reask = b, reask
				return nil
			}
		}
		if needsApproval {
			n, err := p.openApprovals(ctx, tx, now)
			if err != nil {
				return err
			}
			if n >= p.cfg.MaxPending {
				out.capped = n
				return nil
			}
		}
		nr := &index.Row{Session: p.cfg.Session, Key: c.key, Tool: c.t.name, SideEffect: c.t.spec.SideEffect, RunID: p.newRunID(),
			CreatedAt: now, Open: true, State: index.StateBegun}
		if err := tx.Insert(nr); err != nil {
			return err
		}
		out.row, out.fresh = nr, true
		return nil
	})
	return out, err
}

// blocker finds a row of another key whose unknown outcome blocks the
// tool, reading each blocking row's approval from the store: approved or
// rejected, it no longer blocks; expired, it still does and must be asked
// again.
func (p *Proxy) blocker(ctx context.Context, tx *index.Tx, c *call, now time.Time) (*index.Row, bool, error) {
	bs, err := tx.BlockingRows(p.cfg.Session, c.t.name, c.key)
	if err != nil {
		return nil, false, err
	}
	for _, b := range bs {
		if b.State != index.StateWaiting {
			// Between runs of its question (a re-ask is being begun).
			return b, false, nil
		}
		a, err := p.store.GetApproval(ctx, b.RunID, b.ApprovalID)
		if err != nil {
			return b, false, nil
		}
		switch {
		case a.Status == agentrt.ApprovalPending && (a.ExpiresAt.IsZero() || now.Before(a.ExpiresAt)):
			return b, false, nil
		case a.Status == agentrt.ApprovalApproved:
			if err := tx.Unblock(b.ID); err != nil {
				return nil, false, err
			}
		case a.Status == agentrt.ApprovalRejected:
			nb := *b
			nb.State, nb.Outcome, nb.Blocking, nb.SettledAt = index.StateDone, OutcomeUnknownRejected, false, now
			nb.OpenUntil, nb.Detail = now.Add(p.windowOf(b.Tool)), a.Note
			if err := tx.CAS(&nb, b.State); err != nil {
				return nil, false, err
			}
		default:
			return b, true, nil
		}
	}
	return nil, false, nil
}

// openApprovals counts the session's approvals still pending, reading each
// waiting row's approval from the store, since an operator decides
// without the index knowing.
func (p *Proxy) openApprovals(ctx context.Context, tx *index.Tx, now time.Time) (int, error) {
	refs, err := tx.WaitingApprovals(p.cfg.Session)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range refs {
		a, err := p.store.GetApproval(ctx, r.Run, r.Approval)
		if err == nil && a.Status == agentrt.ApprovalPending && (a.ExpiresAt.IsZero() || now.Before(a.ExpiresAt)) {
			n++
		}
	}
	return n, nil
}

func (p *Proxy) windowOf(tool string) time.Duration {
	if t := p.tools[tool]; t != nil {
		return t.window
	}
	return p.cfg.RepeatWindow
}

// existing answers a call whose key has an open row.
func (p *Proxy) existing(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	switch r.State {
	case index.StateBegun:
		run, err := p.store.GetRun(ctx, r.RunID)
		if errors.Is(err, agentrt.ErrNotFound) {
			// Claimed and never begun (its claimer stopped, or is about to
			// begin it): begin it under its id; of two that try, the
			// store lets one.
			return p.fresh(ctx, c, r)
		}
		if err != nil {
			return p.internal(err, "the record could not be read")
		}
		switch {
		case run.Status == agentrt.RunRunning:
			if time.Now().Before(run.LeaseExpiresAt) {
				return reply.InProgress(), false
			}
			return p.recover(ctx, c, r)
		case run.Status == agentrt.RunWaiting:
			return p.adoptWaiting(ctx, c, r)
		default:
			return p.settleRecord(ctx, c, r)
		}
	case index.StateWaiting:
		return p.waiting(ctx, c, r)
	}
	// Done and open: answer from the outcome.
	now := p.now()
	switch {
	case r.Outcome.StaysUnknown():
		if now.Before(r.OpenUntil) {
			if r.Outcome == OutcomeUnknownDenied {
				return reply.Denied(r.Detail), false
			}
			return reply.Rejected(r.Detail, r.OpenUntil.Sub(r.SettledAt)), false
		}
		return p.reask(ctx, c, r)
	case r.Outcome == OutcomeRejected:
		return reply.Rejected(r.Detail, r.OpenUntil.Sub(r.SettledAt)), false
	case r.Outcome == OutcomeExpired:
		return reply.Expired(), false
	case r.Outcome.Executed():
		return reply.Duplicate(now.Sub(r.SettledAt), r.Outcome, r.Detail), false
	}
	return p.internal(fmt.Errorf("row %d is open with outcome %q", r.ID, r.Outcome), "the record is not understood")
}

// fresh begins the row's run and proposes the call in one commit
// (Gate.BeginPropose): the run's creation, the step, its decision and,
// allowed, the policy's decision and the tool start. With the outcome,
// which ends the run, an allowed call commits twice.
func (p *Proxy) fresh(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	pctx := ctx
	var in *interruption
	if r.Interrupted != "" {
		in = new(interruption)
		if err := json.Unmarshal([]byte(r.Interrupted), in); err != nil {
			return p.internal(err, "the record is not understood")
		}
		pctx = withReask(ctx, in)
	}
	d := agentrt.Decision{Kind: agentrt.KindToolCall, Tool: c.t.name, Args: c.args, Reason: "the host called " + c.t.name}
	gs, st, v, err := p.gate.BeginPropose(pctx, r.RunID, "call "+c.t.name, p.limits(), d)
	if err != nil {
		if _, gerr := p.store.GetRun(ctx, r.RunID); gerr == nil {
			return answer{}, true // another process began it first, or it ended: match again
		}
		return p.internal(err, "the call could not be recorded")
	}
	defer gs.Close()
	if st == nil {
		return p.settleRecord(ctx, c, r)
	}
	return p.verdict(ctx, c, r, gs, st, v)
}

// verdict acts on what the gate made of a proposal or an attach.
func (p *Proxy) verdict(ctx context.Context, c *call, r *index.Row, gs *agentrt.GateSession, st *agentrt.OpenStep, v agentrt.Verdict) (answer, bool) {
	switch v.Outcome {
	case agentrt.VerdictAllowed:
		// A host that cancels lets the call finish and be recorded.
		obs, err := st.Execute(context.WithoutCancel(ctx))
		if err != nil && obs.Kind == "" {
			if errors.Is(err, agentrt.ErrApprovalExpired) {
				return p.settleRecord(ctx, c, r)
			}
			if errors.Is(err, agentrt.ErrRunState) || errors.Is(err, agentrt.ErrRunLeased) {
				// Another call (another proxy on this index) started it
				// first; nothing ran here. Match again.
				return answer{}, true
			}
			return p.internal(err, "the call could not be run")
		}
		return p.executed(ctx, c, r, gs, st.ID(), obs, true)
	case agentrt.VerdictDenied:
		p.closeRun(ctx, gs, "the call was refused")
		o := v.Observation
		if o != nil && o.Kind == agentrt.ObsInvalidDecision {
			return p.settle(ctx, c, r, OutcomeInvalid, o.Summary, reply.Invalid(o.Summary))
		}
		reason := ""
		if o != nil {
			reason = o.Summary
		}
		if r.Interrupted != "" {
			return p.settle(ctx, c, r, OutcomeUnknownDenied, reason, reply.Denied(reason))
		}
		return p.settle(ctx, c, r, OutcomeDenied, reason, reply.Denied(reason))
	case agentrt.VerdictPending:
		return p.opened(ctx, c, r, v.Approval)
	case agentrt.VerdictEnded:
		return p.settleRecord(ctx, c, r)
	}
	// An open session with no step: an approved request the policy now
	// denies, recorded as the step's failure.
	p.closeRun(ctx, gs, "the approved request is no longer allowed")
	reason := "the policy no longer allows it"
	if v.Observation != nil {
		reason = v.Observation.Summary
	}
	return p.settle(ctx, c, r, OutcomeDenied, reason, reply.Denied(reason))
}

// opened records that the run waits on approval a, says so on stderr with
// the command that decides it, and holds the call for a decision.
func (p *Proxy) opened(ctx context.Context, c *call, r *index.Row, a *agentrt.Approval) (answer, bool) {
	if a == nil {
		return p.internal(errors.New("a pending verdict without an approval"), "the record is not understood")
	}
	nr, err := p.ix.Set(ctx, r, func(n *index.Row) {
		n.State, n.ApprovalID, n.Blocking = index.StateWaiting, a.ID, a.Kind == agentrt.InterruptedSideEffect && c.t.mutating()
	})
	if err != nil {
		return p.internal(err, "the record could not be written")
	}
	p.logf("agentrt-proxy: approval %s (%s) for %s waits; decide with: agentrt -db %s approve %s -approval %s (or reject)",
		reply.Quote(a.ID, reply.BoundName), reply.Quote(a.Kind, reply.BoundName), reply.Quote(c.t.name, reply.BoundName), strconv.Quote(trace.Sanitize(p.cfg.Database)),
		reply.Quote(r.RunID, reply.BoundName), reply.Quote(a.ID, reply.BoundName))
	return p.holdFor(ctx, c, nr, *a)
}

// adoptWaiting brings a begun row whose run already waits (its claimer
// stopped before it wrote so) up to date.
func (p *Proxy) adoptWaiting(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	as, err := p.store.ListApprovals(ctx, r.RunID)
	if err != nil || len(as) == 0 {
		return p.internal(fmt.Errorf("run %s waits on no approval: %v", r.RunID, err), "the record is not understood")
	}
	return p.adopt(ctx, c, r, as[len(as)-1])
}

// adopt points r at a, the approval its run waits on now, without
// announcing it again (whoever opened it did), and matches the call again
// against the row so written.
func (p *Proxy) adopt(ctx context.Context, c *call, r *index.Row, a agentrt.Approval) (answer, bool) {
	_, err := p.ix.Set(ctx, r, func(n *index.Row) {
		n.State, n.ApprovalID, n.Blocking = index.StateWaiting, a.ID, a.Kind == agentrt.InterruptedSideEffect && c.t.mutating()
	})
	if err != nil {
		return p.internal(err, "the record could not be written")
	}
	return answer{}, true
}

// waiting answers a call whose row waits on an approval.
func (p *Proxy) waiting(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	a, err := p.store.GetApproval(ctx, r.RunID, r.ApprovalID)
	if err != nil {
		return p.internal(err, "the record could not be read")
	}
	now := p.now()
	switch {
	case a.Status == agentrt.ApprovalPending && (a.ExpiresAt.IsZero() || now.Before(a.ExpiresAt)):
		return p.holdFor(ctx, c, r, a)
	case a.Status == agentrt.ApprovalRejected:
		if a.Kind == agentrt.InterruptedSideEffect {
			return p.settle(ctx, c, r, OutcomeUnknownRejected, a.Note, reply.Rejected(a.Note, c.t.window))
		}
		return p.settle(ctx, c, r, OutcomeRejected, a.Note, reply.Rejected(a.Note, c.t.window))
	}
	// Approved, expired, or pending past its expiry: the gate collects or
	// expires it.
	return p.collect(ctx, c, r)
}

// holdFor waits up to the call's hold for a decision on a, sending
// progress when the host asked for it, and collects a decision made in
// time. A call that waits on in vain answers PENDING_APPROVAL (or
// UNKNOWN_OUTCOME).
func (p *Proxy) holdFor(ctx context.Context, c *call, r *index.Row, a agentrt.Approval) (answer, bool) {
	waitText := func() answer {
		w := reply.Pending(a.ID, c.hold)
		if a.Kind == agentrt.InterruptedSideEffect {
			w = reply.Unknown(a.ID)
		}
		w.Run, w.Approval = r.RunID, a.ID
		return w
	}
	if c.hold <= 0 {
		return waitText(), false
	}
	deadline := time.NewTimer(c.hold)
	defer deadline.Stop()
	poll := time.NewTicker(p.opts.PollInterval)
	defer poll.Stop()
	progress := time.NewTicker(p.opts.ProgressInterval)
	defer progress.Stop()
	if c.progress != nil {
		c.progress("waiting for an operator's decision")
	}
	for {
		select {
		case <-ctx.Done():
			return waitText(), false
		case <-deadline.C:
			return waitText(), false
		case <-progress.C:
			if c.progress != nil {
				c.progress("still waiting for an operator's decision")
			}
		case <-poll.C:
			cur, err := p.store.GetApproval(ctx, r.RunID, a.ID)
			if err != nil {
				continue
			}
			if cur.Status != agentrt.ApprovalPending || (!cur.ExpiresAt.IsZero() && !p.now().Before(cur.ExpiresAt)) {
				return p.waiting(ctx, c, r)
			}
		}
	}
}

// collect attaches to a waiting run: an approved request runs, and the
// gate expires what expired.
func (p *Proxy) collect(ctx context.Context, c *call, r *index.Row) (answer, bool) {
	if p.beforeCollect != nil {
		p.beforeCollect(r.RunID)
	}
	gs, v, err := p.gate.Attach(ctx, r.RunID)
	if errors.Is(err, agentrt.ErrRunLeased) {
		return reply.InProgress(), false
	}
	if err != nil {
		run, gerr := p.store.GetRun(ctx, r.RunID)
		if gerr == nil && run.Status.Terminal() {
			return p.settleRecord(ctx, c, r)
		}
		if gerr == nil && run.Status == agentrt.RunRunning {
			return reply.InProgress(), false
		}
		if gerr == nil && run.Status == agentrt.RunWaiting {
			// Since r was read the run came to wait on a newer approval:
			// this proxy's sweep took over a lapsed lease and asked about
			// an interrupted write, or another process's policy asked
			// again. The call waits on that one, as the row soon will.
			if as, lerr := p.store.ListApprovals(ctx, r.RunID); lerr == nil && len(as) > 0 && as[len(as)-1].ID != r.ApprovalID {
				return p.adopt(ctx, c, r, as[len(as)-1])
			}
		}
		return p.internal(err, "the decision could not be collected")
	}
	defer gs.Close()
	if v.Outcome == agentrt.VerdictPending && v.Approval != nil && v.Approval.ID != r.ApprovalID {
		// The policy asks for another approval (a fixed value changed):
		// the row waits on that one now.
		return p.opened(ctx, c, r, v.Approval)
	}
	return p.verdict(ctx, c, r, gs, gs.Current(), v)
}

// refusedJSON records a call whose arguments the runtime refuses as JSON:
// a run of its own whose decision keeps the bytes out of band, and a row
// under a key of its own that matches nothing.
func (p *Proxy) refusedJSON(ctx context.Context, c *call) answer {
	runID := p.newRunID()
	d := agentrt.Decision{Kind: agentrt.KindToolCall, Tool: c.t.name, Args: c.args, Reason: "the host called " + c.t.name}
	gs, _, v, err := p.gate.BeginPropose(ctx, runID, "call "+c.t.name, p.limits(), d)
	if err != nil {
		a, _ := p.internal(err, "the call could not be recorded")
		return a
	}
	defer gs.Close()
	p.closeRun(ctx, gs, "the arguments were refused")
	reason := "the arguments are not acceptable JSON"
	if v.Observation != nil {
		reason = v.Observation.Summary
	}
	now := p.now()
	_ = p.ix.InsertClosed(ctx, &index.Row{Session: p.cfg.Session, Key: "invalid:" + runID, Tool: c.t.name, SideEffect: c.t.spec.SideEffect,
		RunID: runID, CreatedAt: now, State: index.StateDone, Outcome: OutcomeInvalid, Detail: trace.Truncate(reason, reply.BoundReason), SettledAt: now, ClosedAt: now})
	return reply.Invalid(reason)
}
