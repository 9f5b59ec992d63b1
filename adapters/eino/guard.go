package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/schema"
)

// RunKey is the adk session value the middleware reads its run id from.
const RunKey = "agentrt.run"

type runIDKey struct{}

// RunOptions are the Runner options of run runID: the checkpoint id and
// the session value the middleware reads, one id for both. Pass them to
// Runner.Run and again to Runner.Resume.
func RunOptions(runID string) []adk.AgentRunOption {
	return []adk.AgentRunOption{adk.WithCheckPointID(runID), adk.WithSessionValues(map[string]any{RunKey: runID})}
}

// WithRunID names the run for a compose graph invoked without an adk
// Runner; the adk session value wins where both are set.
func WithRunID(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runIDKey{}, runID)
}

func runIDFrom(ctx context.Context) string {
	if v, ok := adk.GetSessionValue(ctx, RunKey); ok {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	s, _ := ctx.Value(runIDKey{}).(string)
	return s
}

// Options adjust a Guard. The zero value waits for approvals.
type Options struct {
	// Goal is recorded on a run the guard begins; zero means "eino agent".
	Goal string
	// Limits bound a run the guard begins; zero means agentrt.FrameworkLimits().
	Limits agentrt.Limits
	// Interrupt raises compose.StatefulInterrupt (info: Pending) on a
	// pending approval instead of waiting in Gate.Await.
	Interrupt bool
}

// Pending is the interrupt info of a call that waits for an operator.
type Pending struct {
	RunID, ApprovalID, Tool, CallID string
}

// Checkpoints encode interrupt info with gob, which must know the type.
func init() { schema.RegisterName[Pending]("agentrt_eino_pending") }

// Guard governs the tool calls of Eino runs through one Gate. It holds one
// GateSession per run id while the process lives; Close releases them.
type Guard struct {
	g       *agentrt.Gate
	classes map[string]agentrt.SideEffect
	opts    Options
	mu      sync.Mutex
	runs    map[string]*runState
}

type runState struct {
	mu      sync.Mutex
	gs      *agentrt.GateSession
	changed chan struct{} // closed and replaced when a step ends or the session changes
}

// New returns a guard over gate for tools of the given classes (the map
// given to Tools; a read-only call is never matched against other runs).
func New(gate *agentrt.Gate, classes map[string]agentrt.SideEffect, opts Options) *Guard {
	if opts.Goal == "" {
		opts.Goal = "eino agent"
	}
	if opts.Limits == (agentrt.Limits{}) {
		opts.Limits = agentrt.FrameworkLimits()
	}
	return &Guard{g: gate, classes: classes, opts: opts, runs: map[string]*runState{}}
}

// Close releases every run's session; the runs stay as they are.
func (m *Guard) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rs := range m.runs {
		rs.mu.Lock()
		if rs.gs != nil {
			rs.gs.Close()
		}
		rs.mu.Unlock()
	}
}

// Complete ends run runID COMPLETED with result once its agent is done.
func (m *Guard) Complete(ctx context.Context, runID string, result json.RawMessage) error {
	rs := m.state(runID)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	gs, a, err := m.session(ctx, rs, runID)
	if err != nil {
		return err
	}
	if a != nil {
		return fmt.Errorf("agentrt/eino: run %s waits on approval %s and cannot complete", runID, a.ID)
	}
	return gs.Complete(ctx, result)
}

func (m *Guard) state(runID string) *runState {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.runs[runID]
	if rs == nil {
		rs = &runState{changed: make(chan struct{})}
		m.runs[runID] = rs
	}
	return rs
}

// session returns the run's open session, or the approval it waits on;
// rs.mu is held. A run another owner leases is waited out.
func (m *Guard) session(ctx context.Context, rs *runState, runID string) (*agentrt.GateSession, *agentrt.Approval, error) {
	for rs.gs == nil || rs.gs.Done() {
		gs, v, err := m.g.BeginOrAttach(ctx, runID, m.opts.Goal, m.opts.Limits)
		var le *agentrt.RunLeasedError
		switch {
		case errors.As(err, &le):
			if err := sleep(ctx, time.Until(le.ExpiresAt)+time.Millisecond); err != nil {
				return nil, nil, err
			}
			continue
		case err != nil:
			return nil, nil, err
		case v.Outcome == agentrt.VerdictPending && v.Approval != nil:
			return nil, v.Approval, nil
		case v.Outcome == agentrt.VerdictPending || v.Outcome == agentrt.VerdictEnded:
			return nil, nil, fmt.Errorf("agentrt/eino: run %s is %s", runID, v.Run.Status)
		}
		rs.gs = gs
		rs.signal()
	}
	return rs.gs, nil, nil
}

func (rs *runState) signal() {
	close(rs.changed)
	rs.changed = make(chan struct{})
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(max(d, time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
