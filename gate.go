package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultAwaitPoll is how often Gate.Await reads an approval when the
// store cannot signal a decision (GateConfig.AwaitPoll zero).
const DefaultAwaitPoll = 200 * time.Millisecond

// GateConfig configures a Gate: the engine without an Agent, because the
// caller's own loop decides. Store and Policy are required; every other
// field means what it means in EngineConfig, zero included.
type GateConfig struct {
	EngineConfig
	// AwaitPoll is how often Await reads a pending approval again; with a
	// store that signals decisions (a Waker: Postgres) it is only the
	// fallback. Zero means DefaultAwaitPoll; it must not be negative.
	AwaitPoll time.Duration
}

// Gate holds the runtime's bounds for a loop the runtime does not own. The
// caller proposes each decision; the gate records it, validates it, asks
// the policy, binds approvals, enforces the limits, holds the run's lease,
// and executes the tool itself. It runs the same session code as a Driver:
// there is one implementation of the step sequence, not two.
//
// There is deliberately no way for a caller to run a tool and report the
// outcome: that a request executes at most once is the runtime's claim, so
// the runtime makes the call, with the tool's registered body or, for a
// tool registered by spec only, the body handed to ExecuteFunc after the
// start is recorded.
type Gate struct {
	e    *engine
	poll time.Duration
	c    calls // Gate.Call's sessions and turns
}

// NewGate checks cfg as NewDriver checks a Config and registers its tools.
func NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.AwaitPoll < 0 {
		return nil, &ConfigError{Field: "GateConfig.AwaitPoll", Reason: fmt.Sprintf("must not be negative, got %s", cfg.AwaitPoll)}
	}
	e, err := newEngine(cfg.EngineConfig)
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) && strings.HasPrefix(ce.Field, "Config.") {
			return nil, &ConfigError{Field: "Gate" + ce.Field, Reason: ce.Reason}
		}
		return nil, err
	}
	poll := cfg.AwaitPoll
	if poll == 0 {
		poll = DefaultAwaitPoll
	}
	return &Gate{e: e, poll: poll}, nil
}

// FrameworkLimits are limits for a loop an agent framework owns, where a
// model reads each tool error and tries again and a turn may hold several
// calls: 200 steps, 10 consecutive failures, a loop threshold of 5,
// approvals pending at most 24 hours and grants executed within one hour.
// Time limits are left off: a framework's own timeouts bound its turns.
func FrameworkLimits() Limits {
	return Limits{MaxSteps: 200, MaxConsecutiveToolFailures: 10, LoopThreshold: 5,
		ApprovalTTL: 24 * time.Hour, GrantTTL: time.Hour}
}

// Begin creates a run with the caller's id, RUNNING under this gate's
// lease, and opens a session on it with no step.
func (g *Gate) Begin(ctx context.Context, runID, goal string, limits Limits) (*GateSession, error) {
	s, err := g.e.begin(ctx, runID, goal, limits)
	if err != nil {
		return nil, err
	}
	return newGateSession(s), nil
}

// BeginOrAttach begins the run when no run has the id, and otherwise
// attaches to it as Attach does, with the same verdicts and errors: a
// framework keyed by its own durable id calls it on every start. A fresh
// run comes back with a zero Outcome and the session open.
func (g *Gate) BeginOrAttach(ctx context.Context, runID, goal string, limits Limits) (*GateSession, Verdict, error) {
	if _, err := g.e.store.GetRun(ctx, runID); errors.Is(err, ErrNotFound) {
		gs, err := g.Begin(ctx, runID, goal, limits)
		if err != nil {
			return nil, Verdict{}, err
		}
		return gs, Verdict{Run: gs.Run()}, nil
	} else if err != nil {
		return nil, Verdict{}, err
	}
	return g.Attach(ctx, runID)
}

// beginOrAttach is BeginOrAttach whose new run is created by the
// session's first write, in that write's transaction (engine.beginHeld).
func (g *Gate) beginOrAttach(ctx context.Context, runID, goal string, limits Limits) (*GateSession, Verdict, error) {
	if _, err := g.e.store.GetRun(ctx, runID); errors.Is(err, ErrNotFound) {
		s, err := g.e.beginHeld(ctx, runID, goal, limits)
		if err != nil {
			return nil, Verdict{}, err
		}
		gs := newGateSession(s)
		return gs, Verdict{Run: gs.Run()}, nil
	} else if err != nil {
		return nil, Verdict{}, err
	}
	return g.Attach(ctx, runID)
}

// Attach does what Driver.Resume does before its loop, and hands the run
// to the caller:
//
//   - a zero Outcome, or VerdictDenied (an approved request the policy now
//     denies, recorded as the step's failure): the session is open with no
//     step, under this gate's lease;
//   - VerdictAllowed: an approved step is open (GateSession.Current) for
//     Execute, with Request a copy of the recorded request; the run still
//     waits, and Execute moves it to RUNNING as it starts the tool. Of
//     several steps awaiting approval, the first one granted is opened;
//   - VerdictPending: the run still waits on Approval (a copy of it: Await
//     it, then Attach again), or waits now because a step awaits approval
//     and none is in flight; the session is already over;
//   - VerdictEnded: the run ended while attaching (an expiry, a record that
//     would not decode); the session is already over.
//
// An error returns no session: ErrRunLeased (*RunLeasedError) when another
// owner's lease is live, ErrRunEnded when the run had already ended; both
// match ErrRunState, as any other refusal does.
func (g *Gate) Attach(ctx context.Context, runID string) (*GateSession, Verdict, error) {
	s, v, err := g.e.attach(ctx, runID)
	if err != nil {
		if v.Outcome == VerdictPending && v.Approval != nil && errors.Is(err, ErrRunState) {
			over := &session{e: g.e, runID: runID, run: copyRun(v.Run), closed: true}
			return &GateSession{s: over, over: fmt.Errorf("%w: run %s waits on approval %s; the session is over", ErrRunState, runID, v.Approval.ID)}, v, nil
		}
		return nil, v, err
	}
	gs := newGateSession(s)
	switch v.Outcome {
	case "", VerdictDenied:
		// A crash between a gate's last sibling and its run.waiting left
		// a step awaiting approval in a RUNNING run: it waits now.
		if err := s.waitIdle(ctx); err != nil {
			gs.end(err)
			return nil, v, err
		}
		if s.run.Status == RunWaiting {
			_, a := s.awaitingGrant()
			gs.end(fmt.Errorf("%w: run %s waits on approval; the session is over", ErrRunState, runID))
			v = Verdict{Outcome: VerdictPending, Run: copyRun(s.run)}
			if a != nil {
				c := copyApproval(*a)
				v.Approval = &c
			}
		}
	case VerdictPending, VerdictEnded:
		gs.over = fmt.Errorf("%w: run %s is %s; the session is over", ErrRunState, runID, s.run.Status)
	case VerdictAllowed:
		o := &OpenStep{gs: gs, st: s.cur, id: s.step(s.cur.idx).ID, index: s.step(s.cur.idx).Index}
		s.cur = nil
		gs.open = append(gs.open, o)
	}
	return gs, v, nil
}

// Await returns the approval once it is decided (approved, rejected,
// cancelled, expired), or once it passed its expiry: then the expiry is
// recorded as a reader would record it (the run cancelled) where the run
// waits, and otherwise the approval is returned still pending with an
// error matching ErrApprovalExpired. With a store that signals decisions
// (a Waker: Postgres LISTEN/NOTIFY) a decision is seen when it commits;
// otherwise the approval is read every GateConfig.AwaitPoll. A cancelled
// ctx returns the approval as last read and ctx's error. Await holds no
// lease and writes nothing but an expiry.
func (g *Gate) Await(ctx context.Context, runID, approvalID string) (Approval, error) {
	var wake <-chan struct{}
	if w, ok := g.e.store.(Waker); ok {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if c, err := w.Wakeups(wctx); err == nil {
			wake = c
		}
	}
	for {
		a, err := g.e.store.GetApproval(ctx, runID, approvalID)
		if err != nil {
			return Approval{}, err
		}
		if a.Status.Decided() {
			return a, nil
		}
		if !a.ExpiresAt.IsZero() && !g.e.now().Before(a.ExpiresAt) {
			return g.expire(ctx, a)
		}
		timer := time.NewTimer(g.poll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return a, ctx.Err()
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// expire records that a pending approval outlived its expiry, if its run
// waits on it, and returns the approval as it then is.
func (g *Gate) expire(ctx context.Context, a Approval) (Approval, error) {
	now := g.e.now()
	evs, err := g.e.store.Update(ctx, func(tx Tx) error {
		run, err := tx.RunGet(a.RunID)
		if err != nil {
			return err
		}
		cur, err := tx.ApprovalGet(a.RunID, a.ID)
		if err != nil {
			return err
		}
		if cur.Status != ApprovalPending || run.Status != RunWaiting {
			return nil
		}
		return expireTx(tx, run, cur, now)
	})
	if err != nil {
		return a, err
	}
	if err := g.e.committed(ctx, evs); err != nil {
		return a, err
	}
	got, err := g.e.store.GetApproval(ctx, a.RunID, a.ID)
	if err != nil {
		return a, err
	}
	if got.Status == ApprovalPending {
		return got, fmt.Errorf("%w: approval %s passed its expiry while run %s still runs other steps", ErrApprovalExpired, a.ID, a.RunID)
	}
	return got, nil
}
