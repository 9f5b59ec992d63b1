package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testhook"
	"github.com/agentrt/agentrt/sqlite"
)

// Point names a place where a crash can stop a loop. Each is just after a
// commit, so the database is left as a process killed there would leave
// it. The harness cannot crash inside a transaction, inside a tool, or
// during a model request.
type Point string

const (
	// AfterStepStarted: a step is recorded, deciding.
	AfterStepStarted Point = testhook.StepStarted
	// AfterDecided: the decision is recorded and not yet judged.
	AfterDecided Point = testhook.Decided
	// AfterAllowed: the policy allowed the call; nothing is started.
	AfterAllowed Point = testhook.Allowed
	// AfterToolStarted: the tool start is recorded; the tool has not run.
	AfterToolStarted Point = testhook.ToolStarted
	// AfterToolEffect: the tool returned; its outcome is not recorded.
	AfterToolEffect Point = testhook.ToolEffect
	// AfterToolFinished: the tool's outcome is recorded.
	AfterToolFinished Point = testhook.ToolFinished
	// AfterResumed: a resume moved the run back to RUNNING (for an
	// approved call, together with its tool start).
	AfterResumed Point = testhook.Resumed
	// AfterAttachAllowed: a resume found the approved call allowed; the
	// run still waits and nothing is started.
	AfterAttachAllowed Point = testhook.AttachAllowed
	// AfterInterrupted: a takeover marked in-flight steps interrupted.
	AfterInterrupted Point = testhook.Interrupted
)

// Points lists every crash point.
func Points() []Point {
	return []Point{AfterStepStarted, AfterDecided, AfterAllowed, AfterToolStarted, AfterToolEffect,
		AfterToolFinished, AfterResumed, AfterAttachAllowed, AfterInterrupted}
}

// Crash stops the loop the first time it reaches At on the step with index
// Step. AfterResumed after an interruption, and AfterInterrupted, name the
// last step of the run.
type Crash struct {
	Step int
	At   Point
}

func (c Crash) String() string { return fmt.Sprintf("%s at step %d", c.At, c.Step) }

// Answer is what the scenario's operator does with a pending approval.
type Answer int

const (
	// Leave leaves the approval pending; the scenario ends there.
	Leave Answer = iota
	// Approve grants it; the run is resumed.
	Approve
	// Reject refuses it; the run is cancelled.
	Reject
)

// Scenario is a run to execute under crashes. Exactly one of Agent and
// Loop is set.
type Scenario struct {
	// Tools the run may call. Each call is recorded in Result.Calls.
	Tools []agentrt.Tool
	// Policy judges requests; nil means agentrt.DefaultPolicy().
	Policy agentrt.Policy
	// Agent decides each step of a Driver's loop.
	Agent agentrt.Agent
	// Loop is a caller's loop over a gate session (see GateLoop). On a
	// resume it is handed the session Attach returned: when Current is
	// not nil, the approved step waits to be executed.
	Loop func(ctx context.Context, s *agentrt.GateSession) error
	// Goal of the run.
	Goal string
	// Limits of the run; zero means agentrt.DefaultLimits().
	Limits agentrt.Limits
	// Reconcile is handed to every driver.
	Reconcile func(ctx context.Context, view agentrt.RunView) (agentrt.Reconciliation, error)
	// Operator answers each approval the run waits on; nil leaves them.
	Operator func(agentrt.Approval) Answer
	// Now is the recorded clock; nil means time.Now.
	Now func() time.Time
	// LeaseTTL of every driver; zero means one minute. Leases lapse by
	// moving the drivers' lease clocks, never by waiting.
	LeaseTTL time.Duration
	// MaxDrivers bounds how many drivers the run may take; zero means 32.
	MaxDrivers int
}

// Call is one tool call as the tool received it.
type Call struct {
	Tool   string
	StepID string
	Args   json.RawMessage
}

// Result is what a scenario recorded.
type Result struct {
	RunID     string
	Run       agentrt.Run
	Steps     []agentrt.Step
	Approvals []agentrt.Approval
	Events    []agentrt.Event
	// Calls are the tool calls made, in order.
	Calls []Call
	// Crashes are the crashes reached, in order.
	Crashes []Crash
	// Resumes counts every driver after the first: one per crash and one
	// per approved resume.
	Resumes int
}

// CallsOn returns the calls made for a step.
func (r Result) CallsOn(stepID string) []Call {
	var out []Call
	for _, c := range r.Calls {
		if c.StepID == stepID {
			out = append(out, c)
		}
	}
	return out
}

// runMu serialises Run: the engine's hook is process-wide.
var runMu sync.Mutex

var runSeq atomic.Int64

// Run executes the scenario, crashing at each of crashes, resuming after
// each crash in a fresh driver over a fresh store handle once the dead
// driver's lease has lapsed, and answering approvals with the scenario's
// Operator. It reports, on t, every invariant Check finds broken, every
// crash not reached, and every error a driver or loop returned, and
// returns what was recorded.
func Run(t testing.TB, sc Scenario, crashes ...Crash) Result {
	t.Helper()
	if (sc.Agent == nil) == (sc.Loop == nil) {
		t.Fatalf("testkit.Run: set exactly one of Scenario.Agent and Scenario.Loop")
	}
	runMu.Lock()
	defer runMu.Unlock()

	if sc.Policy == nil {
		sc.Policy = agentrt.DefaultPolicy()
	}
	if sc.Limits == (agentrt.Limits{}) {
		sc.Limits = agentrt.DefaultLimits()
	}
	if sc.LeaseTTL == 0 {
		sc.LeaseTTL = time.Minute
	}
	if sc.MaxDrivers == 0 {
		sc.MaxDrivers = 32
	}
	k := &kit{runID: fmt.Sprintf("testkit-run-%d", runSeq.Add(1)), crashes: crashes, reached: make([]bool, len(crashes))}
	tools := make([]agentrt.Tool, len(sc.Tools))
	for i, tl := range sc.Tools {
		tools[i] = &recorded{Tool: tl, k: k}
	}
	restore := testhook.Set(k.hook)
	defer restore()

	path := filepath.Join(t.TempDir(), "testkit.db")
	res := Result{RunID: k.runID}
	ctx := context.Background()
	for gen := 0; ; gen++ {
		if gen >= sc.MaxDrivers {
			t.Errorf("testkit: the run took more than %d drivers; stopping", sc.MaxDrivers)
			break
		}
		st, err := sqlite.Open(path)
		if err != nil {
			t.Fatalf("testkit: open the store: %v", err)
		}
		// Each driver's lease clock is two TTLs past the previous one's:
		// every lease a dead driver left has lapsed for the next.
		offset := time.Duration(gen) * 2 * sc.LeaseTTL
		wall := func() time.Time { return time.Now().Add(offset) }
		crashed := k.arm(st)
		done := make(chan error, 1)
		first := gen == 0
		go func() { done <- k.drive(ctx, sc, st, tools, wall, first) }()
		var derr error
		select {
		case <-crashed:
			res.Resumes++
			continue
		case derr = <-done:
		}
		if derr != nil {
			t.Errorf("testkit: driver %d returned: %v", gen, derr)
		}
		run, err := st.GetRun(ctx, k.runID)
		if err != nil {
			st.Close()
			t.Fatalf("testkit: read the run: %v", err)
		}
		next := false
		if run.Status == agentrt.RunWaiting {
			next = k.answer(t, ctx, sc, st, &res)
		} else if run.Status == agentrt.RunRunning && derr == nil {
			t.Errorf("testkit: driver %d returned with the run still RUNNING", gen)
		}
		st.Close()
		if !next {
			break
		}
	}

	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("testkit: open the store: %v", err)
	}
	defer st.Close()
	if res.Run, err = st.GetRun(ctx, k.runID); err != nil {
		t.Fatalf("testkit: read the run: %v", err)
	}
	if res.Steps, err = st.ListSteps(ctx, k.runID); err != nil {
		t.Fatalf("testkit: read the steps: %v", err)
	}
	if res.Approvals, err = st.ListApprovals(ctx, k.runID); err != nil {
		t.Fatalf("testkit: read the approvals: %v", err)
	}
	if res.Events, err = st.ListEvents(ctx, k.runID); err != nil {
		t.Fatalf("testkit: read the events: %v", err)
	}
	k.mu.Lock()
	res.Calls = append(res.Calls, k.calls...)
	res.Crashes = append(res.Crashes, k.order...)
	for i, c := range crashes {
		if !k.reached[i] {
			t.Errorf("testkit: crash %s was never reached", c)
		}
	}
	k.mu.Unlock()
	for _, err := range Check(res) {
		t.Errorf("testkit: %v", err)
	}
	return res
}

// answer asks the operator about the run's pending approval and reports
// whether to resume.
func (k *kit) answer(t testing.TB, ctx context.Context, sc Scenario, st agentrt.Store, res *Result) bool {
	t.Helper()
	apps, err := st.ListApprovals(ctx, k.runID)
	if err != nil {
		t.Fatalf("testkit: read the approvals: %v", err)
	}
	var latest *agentrt.Approval
	for i := range apps {
		if apps[i].Status == agentrt.ApprovalPending || apps[i].Status == agentrt.ApprovalApproved {
			latest = &apps[i]
		}
	}
	if latest == nil {
		t.Errorf("testkit: the run waits with no pending or approved approval")
		return false
	}
	op := agentrt.Operator{Store: st, Now: sc.Now}
	if latest.Status == agentrt.ApprovalApproved {
		// Approved but not executed: a loop that left its approved step.
		if k.lastResumed == latest.ID {
			t.Errorf("testkit: approval %s was granted but the loop never executed it", latest.ID)
			return false
		}
		k.lastResumed = latest.ID
		res.Resumes++
		return true
	}
	answer := Leave
	if sc.Operator != nil {
		answer = sc.Operator(*latest)
	}
	switch answer {
	case Approve:
		// Bound to the approval the scenario was handed.
		if err := op.ApproveShown(ctx, k.runID, latest.ID, latest.Hash, "testkit", "approved by the scenario"); err != nil {
			t.Errorf("testkit: approve %s: %v", latest.ID, err)
			return false
		}
		k.lastResumed = latest.ID
		res.Resumes++
		return true
	case Reject:
		if err := op.RejectShown(ctx, k.runID, latest.ID, latest.Hash, "testkit", "rejected by the scenario"); err != nil {
			t.Errorf("testkit: reject %s: %v", latest.ID, err)
		}
	}
	return false
}

// kit is one Run's state, shared with the engine hook and the tools.
type kit struct {
	runID string

	mu          sync.Mutex
	crashes     []Crash
	reached     []bool
	order       []Crash
	store       *sqlite.Store
	crashed     chan struct{}
	calls       []Call
	lastResumed string
}

// arm makes st the store a crash closes and returns the channel the crash
// closes.
func (k *kit) arm(st *sqlite.Store) <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.store = st
	k.crashed = make(chan struct{})
	return k.crashed
}

// hook is the engine's crash hook: at a requested crash it closes the
// store, so nothing more is written and the lease stays in the row, and
// ends the goroutine where it stands.
func (k *kit) hook(point, runID string, step int) {
	if runID != k.runID {
		return
	}
	k.mu.Lock()
	idx := -1
	for i, c := range k.crashes {
		if !k.reached[i] && string(c.At) == point && c.Step == step {
			idx = i
			break
		}
	}
	if idx < 0 {
		k.mu.Unlock()
		return
	}
	k.reached[idx] = true
	k.order = append(k.order, k.crashes[idx])
	st, crashed := k.store, k.crashed
	k.mu.Unlock()
	st.Close()
	close(crashed)
	runtime.Goexit()
}

// drive runs one driver (or gate) over the run.
func (k *kit) drive(ctx context.Context, sc Scenario, st agentrt.Store, tools []agentrt.Tool, wall func() time.Time, first bool) error {
	eng := agentrt.EngineConfig{Store: st, Policy: sc.Policy, Tools: tools, Reconcile: sc.Reconcile, Now: sc.Now, LeaseTTL: sc.LeaseTTL, LeaseOwner: "testkit"}
	if sc.Agent != nil {
		d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: eng, Agent: sc.Agent})
		if err != nil {
			return err
		}
		testhook.SetWallClock(d, wall)
		if first {
			_, err = d.StartWithID(ctx, k.runID, sc.Goal, sc.Limits)
		} else {
			_, err = d.Resume(ctx, k.runID)
		}
		return err
	}
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: eng})
	if err != nil {
		return err
	}
	testhook.SetWallClock(g, wall)
	var s *agentrt.GateSession
	if first {
		if s, err = g.Begin(ctx, k.runID, sc.Goal, sc.Limits); err != nil {
			return err
		}
	} else {
		var v agentrt.Verdict
		if s, v, err = g.Attach(ctx, k.runID); err != nil {
			return err
		}
		if v.Outcome == agentrt.VerdictPending || v.Outcome == agentrt.VerdictEnded {
			return nil
		}
	}
	defer s.Close()
	if err := sc.Loop(ctx, s); err != nil {
		return fmt.Errorf("the loop returned an error: %w", err)
	}
	if cur := s.Current(); cur != nil {
		return fmt.Errorf("the loop returned with step %d open", cur.Index())
	}
	if !s.Done() {
		return errors.New("the loop returned with the session open and the run RUNNING")
	}
	return nil
}

// recorded wraps a scenario's tool to record each call.
type recorded struct {
	agentrt.Tool
	k *kit
}

func (r *recorded) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	if call.RunID == r.k.runID {
		r.k.mu.Lock()
		r.k.calls = append(r.k.calls, Call{Tool: r.Tool.Spec().Name, StepID: call.StepID, Args: append(json.RawMessage(nil), call.Args...)})
		r.k.mu.Unlock()
	}
	return r.Tool.Call(ctx, call)
}

// GateLoop is a caller's loop over a gate session that asks agent for each
// decision, as a Driver would: it executes an approved step it is handed,
// then steps until the run pauses or ends.
func GateLoop(agent agentrt.Agent) func(ctx context.Context, s *agentrt.GateSession) error {
	return func(ctx context.Context, s *agentrt.GateSession) error {
		if cur := s.Current(); cur != nil {
			if _, err := cur.Execute(ctx); err != nil {
				return err
			}
		}
		for !s.Done() {
			step, err := s.Step(ctx)
			if err != nil {
				return err
			}
			if step == nil {
				return nil
			}
			in, err := s.Input(ctx)
			if err != nil {
				return err
			}
			d, err := agent.Decide(ctx, in)
			if err != nil {
				_, ferr := step.Fail(ctx, err)
				return ferr
			}
			v, err := step.Propose(ctx, d)
			if err != nil {
				return err
			}
			if v.Outcome == agentrt.VerdictAllowed {
				if _, err := step.Execute(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// Check returns every invariant r breaks, one error each:
//
//   - no step executes twice on its own: a step has at most one tool start
//     not bound to an approval, and no tool call without a recorded start;
//   - an approved request executes at most once: no approval is named by
//     two tool starts, and one that is names an approval that was granted;
//   - every tool start is finished or interrupted: a later event on the
//     step says how it ended, and no step is left executing;
//   - no lease is left in flight: a run that paused or ended holds no
//     lease and no step deciding or executing.
func Check(r Result) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	approvals := map[string]agentrt.Approval{}
	for _, a := range r.Approvals {
		approvals[a.ID] = a
	}
	index := map[string]int{}
	for _, s := range r.Steps {
		index[s.ID] = s.Index
	}
	type start struct {
		seq      int64
		approval string
	}
	starts := map[string][]start{}
	byApproval := map[string]int{}
	for _, e := range r.Events {
		if e.Type != agentrt.EventToolStarted {
			continue
		}
		p, _ := agentrt.PayloadAs[agentrt.ToolStartedPayload](e)
		starts[e.StepID] = append(starts[e.StepID], start{e.Seq, p.ApprovalID})
		if p.ApprovalID != "" {
			byApproval[p.ApprovalID]++
		}
	}
	stepIDs := make([]string, 0, len(starts))
	for id := range starts {
		stepIDs = append(stepIDs, id)
	}
	sort.Slice(stepIDs, func(i, j int) bool { return index[stepIDs[i]] < index[stepIDs[j]] })

	// No step executes twice on its own.
	for _, id := range stepIDs {
		own := 0
		for _, s := range starts[id] {
			if s.approval == "" {
				own++
			}
		}
		if own > 1 {
			add("step %d started its tool %d times without an approval", index[id], own)
		}
	}
	calls := map[string]int{}
	var callOrder []string
	for _, c := range r.Calls {
		if calls[c.StepID] == 0 {
			callOrder = append(callOrder, c.StepID)
		}
		calls[c.StepID]++
	}
	for _, id := range callOrder {
		if n, m := calls[id], len(starts[id]); n > m {
			add("step %d's tool was called %d times with %d recorded tool starts", index[id], n, m)
		}
	}

	// An approved request executes at most once.
	ids := make([]string, 0, len(byApproval))
	for id := range byApproval {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if n := byApproval[id]; n > 1 {
			add("approval %s was executed %d times", id, n)
		}
		if a, ok := approvals[id]; !ok || a.Status != agentrt.ApprovalApproved {
			add("a tool start names approval %s, which was not granted (%s)", id, a.Status)
		}
	}

	// Every tool start is finished or interrupted.
	for _, id := range stepIDs {
		ss := starts[id]
		for i, s := range ss {
			end := int64(-1)
			if i+1 < len(ss) {
				end = ss[i+1].seq
			}
			if !endedBetween(r.Events, id, s.seq, end) {
				add("the tool start of step %d (event %d) was never finished or interrupted", index[id], s.seq)
			}
		}
	}

	// No lease in flight.
	if r.Run.Status == agentrt.RunRunning {
		add("the run was left RUNNING (lease %q)", r.Run.LeaseOwner)
	} else {
		if r.Run.LeaseOwner != "" {
			add("the %s run still holds a lease for %q", r.Run.Status, r.Run.LeaseOwner)
		}
		for _, s := range r.Steps {
			if s.Status.InFlight() {
				add("step %d is left %s in a %s run", s.Index, s.Status, r.Run.Status)
			}
		}
	}
	return errs
}

// endedBetween reports whether an event after seq from (and before seq to,
// when to is positive) ends the tool call on step: its outcome, its
// interruption, a failure, or the run's end.
func endedBetween(evs []agentrt.Event, step string, from, to int64) bool {
	for _, e := range evs {
		if e.Seq <= from || (to > 0 && e.Seq >= to) {
			continue
		}
		switch {
		case e.StepID == step && (e.Type == agentrt.EventToolFinished || e.Type == agentrt.EventStepInterrupted || e.Type == agentrt.EventStepFailed):
			return true
		case e.Type == agentrt.EventRunFinished:
			return true
		}
	}
	return false
}
