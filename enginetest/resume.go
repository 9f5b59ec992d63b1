package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// A step re-paused on resume has several approvals, and only the latest can
// grant: while it is pending, Resume is refused and changes nothing, however
// often, even when the policy asks precisely for an older approval that was
// granted; once it is granted, a policy asking for the older one again asks
// anew.
func caseResume_OnlyTheLatestApprovalOfAStepGrants(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	var version atomic.Int64
	version.Store(1)
	policy := kit.Recording(agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
		return agentrt.NeedApproval("send", "check", map[string]int64{"v": version.Load()}, nil)
	}))
	agent := kit.Script(kit.Call("send", `{"path":"/a"}`), kit.Complete(`{}`))
	d := e.Driver(agent, policy, send)
	startPaused(t, d, "run-1", agentrt.DefaultLimits())
	a1 := kit.PendingApproval(t, e.Store, "run-1")
	op := e.Operator()
	e.approve(t, a1, "")

	// The policy now asks for another approval: the step waits again.
	version.Store(2)
	resumePauses(t, d, "run-1", "Resume under a changed policy")
	a2 := kit.PendingApproval(t, e.Store, "run-1")
	if a2.ID == a1.ID || a2.StepID != a1.StepID {
		t.Fatalf("re-pause: a1 %+v a2 %+v", a1, a2)
	}

	// The policy asks for a1 again, which was granted; a2 is the latest.
	version.Store(1)
	before := e.db.snapshot(t)
	asked := policy.N()
	for i := 0; i < 3; i++ {
		if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunState) {
			t.Fatalf("Resume %d while the latest approval is pending = %v, want ErrRunState", i, err)
		}
	}
	if err := op.ApproveShown(ctx, "run-1", a1.ID, a1.Hash, "op", ""); !errors.Is(err, agentrt.ErrNotPending) {
		t.Fatalf("Approve a1 again = %v, want ErrNotPending", err)
	}
	e.db.requireUnchanged(t, before, "refused resumes")
	if policy.N() != asked {
		t.Fatal("a refused resume asked the policy")
	}

	// a2 granted, but the policy asks for a1's approval: that is not the
	// grant, so it asks again.
	e.approve(t, a2, "")
	resumePauses(t, d, "run-1", "Resume with a2 granted, policy asking for a1")
	if send.N() != 0 {
		t.Fatalf("send ran %d times without its latest approval granted", send.N())
	}
	a3 := kit.PendingApproval(t, e.Store, "run-1")
	e.approve(t, a3, "")
	resumeCompletes(t, d, "run-1")
	if got := send.Args(); !reflect.DeepEqual(got, []string{`{"path":"/a"}`}) {
		t.Fatalf("send ran with %q", got)
	}
	as := kit.MustApprovals(t, e.Store, "run-1")
	if len(as) != 3 || as[0].ID != a1.ID || as[1].ID != a2.ID || as[2].ID != a3.ID {
		t.Fatalf("approvals = %+v", as)
	}
	for _, a := range as {
		if a.Status != agentrt.ApprovalApproved || a.StepID != a1.StepID {
			t.Fatalf("approval %s is %s on step %s", a.ID, a.Status, a.StepID)
		}
	}
	repause := []kit.E{kit.ApprDecided, kit.StepPolicy, kit.ApprRequested}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, repause, repause,
		[]kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
}

// A grant resumed by a driver whose tool now has a stricter schema does not
// run: the recorded arguments fail the current schema, the step becomes an
// invalid decision without asking the policy, and the agent decides again.
func caseResume_ApprovedArgumentsMeetTheCurrentSchema(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	_, a := kit.PausedRun(t, e.Env, `{"path":"/etc/hosts"}`)
	e.approve(t, a, "")
	stricter := kit.NewTool("send", agentrt.RemoteMutation,
		`{"type":"object","properties":{"path":{"type":"string","pattern":"^/tmp/"}},"required":["path"],"additionalProperties":false}`, nil)
	policy := kit.Recording(agentrt.DefaultPolicy())
	agent := kit.Script(kit.Call("send", `{"path":"/tmp/x"}`), kit.Complete(`{}`))
	d := e.Driver(agent, policy, stricter)
	resumeCompletes(t, d, "run-1")
	if stricter.N() != 0 {
		t.Fatalf("send ran %d times with arguments its schema now refuses", stricter.N())
	}
	if policy.N() != 0 {
		t.Fatalf("the policy was asked %d times about arguments the schema refuses", policy.N())
	}
	if agent.N.Load() != 1 {
		t.Fatalf("agent asked %d times, want once after the refusal", agent.N.Load())
	}
	st := kit.MustSteps(t, e.Store, "run-1")[0]
	if st.Status != agentrt.StepFailed {
		t.Fatalf("step 0 is %s", st.Status)
	}
	kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
	if as := kit.MustApprovals(t, e.Store, "run-1"); len(as) != 1 || as[0].Status != agentrt.ApprovalApproved {
		t.Fatalf("approvals = %+v", as)
	}
	rs := kit.EventsOf(t, e.Store, "run-1", kit.RunResumed)
	if len(rs) != 1 || kit.Payload(t, rs[0])["after"] != "invalid_on_resume" {
		t.Fatalf("run.resumed = %v", rs)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepFailed}, kit.EvComplete)
}

// A grant binds the request with the tool's spec: a driver whose tool was
// redescribed and reclassified since does not run the old grant; the policy
// is asked about the request as it would run now and the step waits again.
func caseResume_ChangedSpecIsAnotherRequest(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
	e.approve(t, a, "")
	changed := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	changed.Description = "deletes the archive at path"
	d := e.Driver(kit.Script(kit.Complete(`{}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), changed)
	resumePauses(t, d, "run-1", "Resume")
	if changed.N() != 0 {
		t.Fatal("the old grant ran a changed tool")
	}
	a2 := kit.PendingApproval(t, e.Store, "run-1")
	if a2.Request.Spec.Description != changed.Description || string(a2.Request.Args) != `{"path":"/report"}` {
		t.Fatalf("new approval binds %+v", a2.Request)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.StepPolicy, kit.ApprRequested})
}

// gatedPolicy lets a resume's evaluation through only once both racing
// drivers have reached it.
type gatedPolicy struct {
	inner   agentrt.Policy
	resume  *atomic.Bool
	arrived chan<- struct{}
	release <-chan struct{}
}

func (p gatedPolicy) Evaluate(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
	if p.resume.Load() {
		p.arrived <- struct{}{}
		<-p.release
	}
	return p.inner.Evaluate(ctx, req, view)
}

// resumeRace resumes runID at once from two drivers, each on its own store
// of e's database with the configuration config builds; gate wraps the
// policy so that both resumes are inside it before either goes on. Exactly
// one Resume must succeed and the other fail with ErrRunState; it returns
// what each returned and which one succeeded.
func resumeRace(t *testing.T, e *env, runID string, config func(gate func(agentrt.Policy) agentrt.Policy) agentrt.Config) ([]agentrt.Run, int) {
	t.Helper()
	var resume atomic.Bool
	resume.Store(true)
	arrived := make(chan struct{})
	release := make(chan struct{})
	gate := func(p agentrt.Policy) agentrt.Policy {
		return gatedPolicy{inner: p, resume: &resume, arrived: arrived, release: release}
	}
	drivers := make([]*agentrt.Driver, 2)
	for i := range drivers {
		cfg := config(gate)
		cfg.Store = e.db.open(t)
		drivers[i] = e.DriverFor(cfg)
	}
	runs, errs := make([]agentrt.Run, 2), make([]error, 2)
	var wg sync.WaitGroup
	for i, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = d.Resume(context.Background(), runID)
		}()
	}
	<-arrived
	<-arrived
	resume.Store(false)
	close(release)
	wg.Wait()
	won, lost := -1, -1
	for i, err := range errs {
		switch {
		case err == nil:
			won = i
		case errors.Is(err, agentrt.ErrRunState):
			lost = i
		default:
			t.Fatalf("Resume %d: %v", i, err)
		}
	}
	if won < 0 || lost < 0 {
		t.Fatalf("want one winner and one ErrRunState, got %v and %v", errs[0], errs[1])
	}
	return runs, won
}

// Two processes resume one approved run at once, both past the policy: one
// executes the request, the other gets ErrRunState, and the tool runs once.
func caseResume_ConcurrentResumeExecutesOnce(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
	e.approve(t, a, "")
	var executions atomic.Int64
	runs, won := resumeRace(t, e, "run-1", func(gate func(agentrt.Policy) agentrt.Policy) agentrt.Config {
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			executions.Add(1)
			return agentrt.ToolResult{Content: json.RawMessage(`{"sent":true}`)}, nil
		})
		return e.Config(kit.Script(kit.Call("send", `{"path":"/other"}`), kit.Complete(`{}`)), gate(agentrt.DefaultPolicy()), send)
	})
	if n := executions.Load(); n != 1 {
		t.Fatalf("the approved request ran %d times, want once", n)
	}
	kit.RequireEnded(t, runs[won], agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	kit.RequireEnded(t, kit.MustRun(t, e.Store, "run-1"), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
}

// crashingStore stands for a process that dies: once crashed, it commits
// nothing more and renews no lease. It records what each commit wrote.
type crashingStore struct {
	agentrt.Store
	crashed atomic.Bool
	mu      sync.Mutex
	commits [][]kit.E
}

var errCrashed = errors.New("the process died")

func (c *crashingStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	if c.crashed.Load() {
		return nil, errCrashed
	}
	evs, err := c.Store.Update(ctx, fn)
	if err == nil {
		var types []kit.E
		for _, e := range evs {
			types = append(types, e.Type)
		}
		c.mu.Lock()
		c.commits = append(c.commits, types)
		c.mu.Unlock()
	}
	return evs, err
}

func (c *crashingStore) RenewLease(ctx context.Context, p agentrt.LeaseRenewal) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.Store.RenewLease(ctx, p)
}

// A process that dies around a resume leaves the approved request as it was
// recorded. Dying before the resume commits leaves nothing written, and a
// later Resume runs the request once. Dying after it, while the tool runs,
// leaves the resume, its policy decision and the tool start committed
// together; the run cannot be taken over while the lease lives, and a
// takeover after it lapses asks an operator before running that request
// again, on the same step.
func caseResume_CrashAfterResumeKeepsTheApprovedRequest(t *testing.T, bk *Backend) {
	ctx := context.Background()
	t.Run("before the resume commits", func(t *testing.T) {
		e := newEnv(t, bk)
		_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
		e.approve(t, a, "")
		before := e.db.snapshot(t)
		cs := &crashingStore{Store: e.Store}
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
			cs.crashed.Store(true) // dies while the policy decides
			return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
		})
		cfg := e.Config(kit.Script(), policy, send)
		cfg.Store = cs
		if _, err := e.DriverFor(cfg).Resume(ctx, "run-1"); !errors.Is(err, errCrashed) {
			t.Fatalf("Resume on a dying process = %v", err)
		}
		if send.N() != 0 {
			t.Fatal("the tool ran though its start was never committed")
		}
		e.db.requireUnchanged(t, before, "a resume that died before committing")

		send2 := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		run, err := e.Driver(kit.Script(kit.Call("send", `{"path":"/x"}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), send2).Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if got := send2.Args(); !reflect.DeepEqual(got, []string{`{"path":"/report"}`}) {
			t.Fatalf("send ran with %q, want the approved request once", got)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
	})
	t.Run("after the resume commits", func(t *testing.T) {
		e := newEnv(t, bk)
		_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
		e.approve(t, a, "")
		cs := &crashingStore{Store: e.Store}
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			cs.crashed.Store(true) // the effect happened; its record never will
			return agentrt.ToolResult{Content: json.RawMessage(`{"sent":true}`)}, nil
		})
		cfg := e.Config(kit.Script(), agentrt.DefaultPolicy(), send)
		cfg.Store = cs
		if _, err := e.DriverFor(cfg).Resume(ctx, "run-1"); !errors.Is(err, errCrashed) {
			t.Fatalf("Resume on a dying process = %v", err)
		}
		if send.N() != 1 {
			t.Fatalf("send ran %d times", send.N())
		}
		if !reflect.DeepEqual(cs.commits, [][]kit.E{{kit.RunResumed, kit.StepPolicy, kit.ToolStarted}}) {
			t.Fatalf("the dying resume committed %v, want the resume, its decision and the tool start together", cs.commits)
		}
		run := kit.MustRun(t, e.Store, "run-1")
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		if run.Status != agentrt.RunRunning || run.LeaseOwner == "" || st.Status != agentrt.StepExecuting || st.Policy == nil {
			t.Fatalf("after the crash: run %s lease %q, step %s policy %+v", run.Status, run.LeaseOwner, st.Status, st.Policy)
		}

		// Another process: refused while the dead one's lease lives.
		send2 := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		agent2 := kit.Script(kit.Call("send", `{"path":"/other"}`), kit.Complete(`{}`))
		d2 := e.Driver(agent2, agentrt.DefaultPolicy(), send2)
		before := e.db.snapshot(t)
		if _, err := d2.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunLeased) {
			t.Fatalf("Resume under a live lease = %v, want ErrRunLeased", err)
		}
		e.db.requireUnchanged(t, before, "a Resume refused by the lease")

		// The lease lapses (the wall clock it is judged by is not the
		// test's to move, so the row is aged instead).
		e.db.exec(t, 1, `UPDATE runs SET lease_expires_at = '2000-01-01T00:00:00Z' WHERE id = 'run-1'`)
		run = resumePauses(t, d2, "run-1", "takeover")
		if send2.N() != 0 {
			t.Fatal("the takeover ran the interrupted side effect again by itself")
		}
		a2 := kit.PendingApproval(t, e.Store, "run-1")
		if a2.Kind != agentrt.InterruptedSideEffect || a2.StepID != a.StepID || string(a2.Request.Args) != `{"path":"/report"}` {
			t.Fatalf("interruption approval = %+v", a2)
		}
		e.approve(t, a2, "re-run it")
		// The operator was shown that the call was cut off and may have
		// taken effect: the policy, asked again, wants an approval of this
		// same request, and that approval counts as it (one approval after
		// a crash, not two).
		run = resumeCompletes(t, d2, "run-1")
		if got := send2.Args(); !reflect.DeepEqual(got, []string{`{"path":"/report"}`}) {
			t.Fatalf("the re-run ran with %q, want the approved request once", got)
		}
		if apps := kit.MustApprovals(t, e.Store, "run-1"); len(apps) != 2 {
			t.Fatalf("%d approvals were asked, want the original and the interruption's", len(apps))
		}
		if n := agent2.N.Load(); n != 1 {
			t.Fatalf("agent asked %d times, want once, after the re-run", n)
		}
		steps := kit.MustSteps(t, e.Store, "run-1")
		if len(steps) != 2 || steps[0].Status != agentrt.StepDone {
			t.Fatalf("steps = %+v", steps)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted},
			[]kit.E{kit.LeaseTakeover, kit.StepInterrupt, kit.StepPolicy, kit.ApprRequested},
			[]kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
	})
}

// A grant not resumed within GrantTTL of its decision expires at Resume: the
// run is cancelled as approval_expired, the grant keeps who decided it, and
// nothing runs or is asked. Within the TTL it runs; ApprovalTTL alone never
// expires a grant.
func caseResume_GrantNotResumedWithinTheTTLExpires(t *testing.T, bk *Backend) {
	ctx := context.Background()
	cases := []struct {
		name    string
		limits  func(*agentrt.Limits)
		wait    time.Duration
		expires bool
	}{
		{"past the grant TTL", func(l *agentrt.Limits) { l.GrantTTL = time.Hour }, time.Hour + time.Second, true},
		{"within the grant TTL", func(l *agentrt.Limits) { l.GrantTTL = time.Hour }, 59 * time.Minute, false},
		{"approval TTL alone", func(l *agentrt.Limits) { l.ApprovalTTL = time.Minute }, 2 * time.Hour, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
			policy := kit.Recording(agentrt.DefaultPolicy())
			agent := kit.Script(kit.Call("send", `{"path":"/report"}`), kit.Complete(`{}`))
			d := e.Driver(agent, policy, send)
			run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(c.limits))
			if err != nil || run.Status != agentrt.RunWaiting {
				t.Fatalf("Start = %s, %v", run.Status, err)
			}
			a := kit.PendingApproval(t, e.Store, "run-1")
			e.Clock.Advance(30 * time.Second)
			decidedAt := e.Clock.Now()
			if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "alice", "go"); err != nil {
				t.Fatalf("Approve: %v", err)
			}
			e.Clock.Advance(c.wait)
			run, err = d.Resume(ctx, "run-1")
			if !c.expires {
				if err != nil {
					t.Fatalf("Resume: %v", err)
				}
				kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
				if send.N() != 1 {
					t.Fatalf("send ran %d times", send.N())
				}
				return
			}
			if err != nil && !errors.Is(err, agentrt.ErrApprovalExpired) {
				t.Fatalf("Resume of an expired grant: %v", err)
			}
			run = kit.MustRun(t, e.Store, "run-1")
			kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonApprovalExpired)
			if send.N() != 0 || policy.N() != 1 || agent.N.Load() != 1 {
				t.Fatalf("send ran %d times, policy asked %d, agent %d; want nothing after the pause", send.N(), policy.N(), agent.N.Load())
			}
			got, _ := e.Store.GetApproval(ctx, "run-1", a.ID)
			if got.Status != agentrt.ApprovalExpired || got.DecidedBy != "alice" || !got.DecidedAt.Equal(decidedAt) {
				t.Fatalf("approval = %+v", got)
			}
			st := kit.MustSteps(t, e.Store, "run-1")[0]
			if st.Status != agentrt.StepFailed {
				t.Fatalf("step is %s", st.Status)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided}, []kit.E{kit.ApprDecided, kit.StepFailed, kit.RunFinished})
			if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunState) {
				t.Fatalf("second Resume = %v, want ErrRunState", err)
			}
		})
	}
}

// Two processes resume one approved run at once and today's policy asks for
// a different approval: one re-pauses the step, the other gets ErrRunState,
// and exactly one new approval is added.
func caseResume_ConcurrentRepauseAddsOneApproval(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
	e.approve(t, a, "")
	secondLook := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		return agentrt.NeedApproval("second-look", "asks again today", nil, map[string]string{"why": "policy changed"})
	})
	// The winner re-pauses the step; the other gets ErrRunState.
	resumeRace(t, e, "run-1", func(gate func(agentrt.Policy) agentrt.Policy) agentrt.Config {
		return e.Config(kit.Script(), gate(secondLook), kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil))
	})
	apps := kit.MustApprovals(t, e.Store, "run-1")
	if len(apps) != 2 || apps[1].Kind != "second-look" || apps[1].Status != agentrt.ApprovalPending {
		t.Fatalf("approvals after the race: %+v; want the granted one and one new pending", apps)
	}
	run, err := e.Store.GetRun(ctx, "run-1")
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("run = %s, %v; want WAITING_FOR_APPROVAL", run.Status, err)
	}
}
