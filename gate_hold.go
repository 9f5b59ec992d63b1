package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentrt/agentrt/internal/ctxsleep"
)

// DefaultCallIdle is how long the session Gate.Call holds on a run
// outlives the run's last call: the next model turn reuses it, and no
// lease outlives a finished turn for long.
const DefaultCallIdle = 5 * time.Second

// DefaultTurnWait bounds how long a call that may need approval waits for
// the rest of its turn (Gate.Turn) when Call.TurnWait is zero.
const DefaultTurnWait = time.Second

// calls is what Gate.Call keeps between calls: one hold per run, and the
// turns announced by Gate.Turn.
type calls struct {
	mu    sync.Mutex
	holds map[string]*callHold
	turns map[turnKey]*callTurn
}

// callHold is this process's hold on one run for Gate.Call: its session,
// the granted step Attach opened, and which steps' grants calls await.
type callHold struct {
	id      string
	refs    int         // guarded by calls.mu
	idle    *time.Timer // guarded by calls.mu
	mu      sync.Mutex
	gs      *GateSession
	granted *OpenStep      // an approved step Attach opened, not yet taken
	waiting map[string]int // step id -> calls awaiting its grant
	signal  chan struct{}  // closed and replaced when a step ends or the session changes
}

type waitMark struct {
	h      *callHold
	stepID string
}

func (g *Gate) hold(id string) *callHold {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	if g.c.holds == nil {
		g.c.holds = map[string]*callHold{}
	}
	h := g.c.holds[id]
	if h == nil {
		h = &callHold{id: id, waiting: map[string]int{}, signal: make(chan struct{})}
		g.c.holds[id] = h
	}
	if h.refs++; h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
	return h
}

func (g *Gate) release(h *callHold) {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	if h.refs--; h.refs == 0 {
		h.idle = time.AfterFunc(DefaultCallIdle, func() { g.drop(h) })
	}
}

// drop closes h's session once no call took it up again.
func (g *Gate) drop(h *callHold) {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	if h.refs > 0 || g.c.holds[h.id] != h {
		return
	}
	delete(g.c.holds, h.id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gs != nil {
		h.gs.Close()
	}
}

// Close closes every session Gate.Call holds, releasing their leases; the
// runs stay as they are, and a later Call attaches them again.
func (g *Gate) Close() {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	for id, h := range g.c.holds {
		if h.idle != nil {
			h.idle.Stop()
		}
		delete(g.c.holds, id)
		h.mu.Lock()
		if h.gs != nil {
			h.gs.Close()
		}
		h.mu.Unlock()
	}
}

// Complete ends run runID COMPLETED with result (empty means {}) through
// the session Gate.Call holds on it, or a new one: a framework's agent is
// done. It is refused while a call of the run is open or the run waits.
func (g *Gate) Complete(ctx context.Context, runID string, result json.RawMessage) error {
	h := g.hold(runID)
	defer g.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	gs, waitOn, err := g.session(ctx, h, Call{RunID: runID})
	switch {
	case err != nil:
		return err
	case waitOn != nil:
		return fmt.Errorf("%w: run %s waits on approval %s and cannot complete", ErrRunState, runID, waitOn.ID)
	}
	return gs.Complete(ctx, result)
}

// session returns h's open session, beginning or attaching the run when
// it has none (h.mu held), or the approval the run waits on. A run begun
// here is created by the session's first write, in the same transaction
// (beginOrAttach): the first call's opening, with its decision, its
// policy's decision and its tool start when allowed. A lease
// another owner holds (a process that died) is waited out.
func (g *Gate) session(ctx context.Context, h *callHold, c Call) (*GateSession, *Approval, error) {
	for h.gs == nil || h.gs.Done() {
		goal, limits := c.Goal, c.Limits
		if goal == "" {
			goal = "framework run"
		}
		if limits == (Limits{}) {
			limits = FrameworkLimits()
		}
		gs, v, err := g.beginOrAttach(ctx, h.id, goal, limits)
		var le *RunLeasedError
		switch {
		case errors.As(err, &le):
			if err := ctxsleep.Sleep(ctx, max(le.ExpiresAt.Sub(g.e.now()), time.Millisecond)); err != nil {
				return nil, nil, err
			}
			continue
		case errors.Is(err, ErrRunEnded):
			return nil, nil, refuse(c, h.id, ErrRunEnded, "the run has ended")
		case err != nil:
			return nil, nil, err
		}
		h.gs, h.granted = gs, nil
		h.changedLocked()
		switch v.Outcome {
		case VerdictAllowed:
			h.granted = gs.Current()
		case VerdictPending:
			if v.Approval == nil {
				return nil, nil, fmt.Errorf("%w: run %s waits with no approval to await", ErrRunState, h.id)
			}
			return nil, v.Approval, nil
		case VerdictEnded:
			return nil, nil, refuse(c, h.id, ErrRunEnded, "the run ended: "+string(v.Run.Status))
		}
	}
	return h.gs, nil, nil
}

// awaitGrant waits (h.mu held, released meanwhile) until the granted step
// h holds, another call's, was taken: by the call of this process that
// awaits it. With no such call, nothing would ever run it, so c is refused.
func (g *Gate) awaitGrant(ctx context.Context, h *callHold, c Call) error {
	o := h.granted
	if h.waiting[o.ID()] == 0 {
		return refuse(c, h.id, nil, fmt.Sprintf("the run must first run its granted step %d, which no call of this process awaits; make that call again, or cancel the run", o.Index()))
	}
	ch := h.signal
	h.mu.Unlock()
	defer h.mu.Lock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}

func (g *Gate) changed(h *callHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changedLocked()
}

func (h *callHold) changedLocked() {
	close(h.signal)
	h.signal = make(chan struct{})
}

// mark notes that a call awaits step stepID's grant, so whichever call of
// this process attaches the run leaves that step to it.
func (g *Gate) mark(runID, stepID string) waitMark {
	h := g.hold(runID)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting[stepID]++
	return waitMark{h: h, stepID: stepID}
}

func (g *Gate) unmark(ms []waitMark) {
	for _, m := range ms {
		m.h.mu.Lock()
		if m.h.waiting[m.stepID]--; m.h.waiting[m.stepID] <= 0 {
			delete(m.h.waiting, m.stepID)
		}
		m.h.mu.Unlock()
		g.release(m.h)
	}
}

// callTurn counts the calls of one model turn yet to open their steps.
type callTurn struct {
	left  int
	ready chan struct{}
}

type turnKey struct{ run, call string }

// Turn announces the calls of one model turn of run runID, by their call
// ids, before they reach Call: each call that is not read-only then opens
// its step and waits (at most Call.TurnWait) until its siblings opened
// theirs before it is proposed. Without it, a call that needs approval
// and is proposed while no sibling is in flight pauses the run, and the
// siblings that arrive after it wait for the operator too. A framework
// that shows its adapter the model's response (an after-model hook)
// calls Turn there; fewer than two ids announce nothing.
func (g *Gate) Turn(runID string, callIDs ...string) {
	t := &callTurn{ready: make(chan struct{})}
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	if g.c.turns == nil {
		g.c.turns = map[turnKey]*callTurn{}
	}
	var keys []turnKey
	for _, id := range callIDs {
		if k := (turnKey{runID, id}); id != "" && g.c.turns[k] != t {
			g.c.turns[k], t.left = t, t.left+1
			keys = append(keys, k)
		}
	}
	if t.left < 2 {
		for _, k := range keys {
			delete(g.c.turns, k)
		}
	}
}

// arrive counts call callID of its turn as opened, and returns the turn.
func (g *Gate) arrive(runID, callID string) *callTurn {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	k := turnKey{runID, callID}
	t := g.c.turns[k]
	if t == nil {
		return nil
	}
	delete(g.c.turns, k)
	if t.left--; t.left == 0 {
		close(t.ready)
	}
	return t
}

// waitsForTurn reports whether c will wait in join for the rest of its
// turn.
func (g *Gate) waitsForTurn(c Call) bool {
	if g.readOnly(c.Tool) || c.TurnWait < 0 {
		return false
	}
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	return g.c.turns[turnKey{c.RunID, c.CallID}] != nil
}

// join arrives on c's turn and, unless c is read-only, waits for the rest
// of it: a read is allowed at once and never needs its siblings proposed.
func (g *Gate) join(c Call) {
	t := g.arrive(c.RunID, c.CallID)
	if t == nil || g.readOnly(c.Tool) || c.TurnWait < 0 {
		return
	}
	wait := c.TurnWait
	if wait == 0 {
		wait = DefaultTurnWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.ready:
	case <-timer.C:
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		for k, x := range g.c.turns {
			if x == t {
				delete(g.c.turns, k) // a call the framework never made
			}
		}
	}
}
