package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kit "github.com/agentrt/agentrt/internal/enginekit"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testhook"
)

// The lease, interruption and gate tests share the helpers below, named lk…
// so they stay apart from the other test files' helpers. Leases are judged
// by a wall clock each test moves by hand (testhook.SetWallClock): no test
// sleeps for a lease to lapse.

// lkWall is a lease clock moved by hand.
type lkWall struct{ ns atomic.Int64 }

func lkNewWall() *lkWall {
	w := &lkWall{}
	w.ns.Store(time.Now().UnixNano())
	return w
}

func (w *lkWall) Now() time.Time          { return time.Unix(0, w.ns.Load()) }
func (w *lkWall) Advance(d time.Duration) { w.ns.Add(int64(d)) }

// lkWait bounds every wait on another goroutine.
const lkWait = 20 * time.Second

// lkOpen opens a store on a fresh database and returns it with the
// database, for a second process's store.
func lkOpen(t testing.TB, b *Backend) (agentrt.Store, *database) {
	t.Helper()
	db := b.fresh(t)
	return db.open(t), db
}

// lkTool is a tool that records every call it receives.
type lkTool struct {
	spec agentrt.ToolSpec
	fn   func(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error)

	mu    sync.Mutex
	calls []agentrt.ToolCall
}

const lkSchema = `{"type":"object","properties":{"n":{"type":"integer"},"text":{"type":"string"}},"additionalProperties":false}`

func lkNewTool(name string, se agentrt.SideEffect, fn func(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error)) *lkTool {
	if fn == nil {
		fn = func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`), Summary: "ok"}, nil
		}
	}
	return &lkTool{spec: agentrt.ToolSpec{Name: name, Description: name + " for tests", InputSchema: json.RawMessage(lkSchema),
		SideEffect: se, Timeout: time.Minute}, fn: fn}
}

func (l *lkTool) Spec() agentrt.ToolSpec { return l.spec }

func (l *lkTool) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	l.mu.Lock()
	call.Args = append(json.RawMessage(nil), call.Args...)
	l.calls = append(l.calls, call)
	l.mu.Unlock()
	return l.fn(ctx, call)
}

// args returns the arguments of every call, in order.
func (l *lkTool) args() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.calls))
	for i, c := range l.calls {
		out[i] = string(c.Args)
	}
	return out
}

// lkCall is a tool_call decision.
func lkCall(tool, args string) agentrt.Decision {
	return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: tool, Args: json.RawMessage(args), Reason: "test"}
}

func lkComplete() agentrt.Decision {
	return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"done":true}`)}
}

// lkScript decides from the list by step index; past its end it fails the
// test and completes.
func lkScript(t testing.TB, ds ...agentrt.Decision) agentrt.AgentFunc {
	return func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		n := in.Steps.Len()
		if n >= len(ds) {
			t.Errorf("agent asked for step %d; the script has %d", n, len(ds))
			return lkComplete(), nil
		}
		return ds[n], nil
	}
}

// lkNever is an agent that must not be asked.
func lkNever(t testing.TB) agentrt.AgentFunc {
	return func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
		t.Error("an agent that must not be asked was asked to decide")
		return lkComplete(), nil
	}
}

// lkDriver builds a driver whose leases are judged by wall (nil: the real
// clock).
func lkDriver(t testing.TB, cfg agentrt.Config, wall *lkWall) *agentrt.Driver {
	t.Helper()
	withDefaultPolicy(&cfg.EngineConfig)
	d, err := agentrt.NewDriver(cfg)
	return onWall(t, d, err, wall)
}

// withDefaultPolicy gives ec the default policy unless it names one.
func withDefaultPolicy(ec *agentrt.EngineConfig) {
	if ec.Policy == nil {
		ec.Policy = agentrt.DefaultPolicy()
	}
}

// onWall fails on err, else judges target's leases by wall (when one is
// given) and returns it; target is a *agentrt.Driver or *agentrt.Gate.
func onWall[T any](t testing.TB, target T, err error, wall *lkWall) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if wall != nil {
		testhook.SetWallClock(target, wall.Now)
	}
	return target
}

// lkOutcome is what a call made on its own goroutine returned.
type lkOutcome[T any] struct {
	val T
	err error
}

// lkGo runs f on its own goroutine; the result arrives on the channel.
func lkGo[T any](f func() (T, error)) <-chan lkOutcome[T] {
	ch := make(chan lkOutcome[T], 1)
	go func() {
		v, err := f()
		ch <- lkOutcome[T]{v, err}
	}()
	return ch
}

// lkAwait is the next value on ch: an outcome, a signal. None within
// lkWait fails the test, naming what it waited for.
func lkAwait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return kit.Recv(t, ch, what, lkWait)
}

// lkSignal waits for ch to be closed (or sent on), as lkAwait.
func lkSignal(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	lkAwait(t, ch, what)
}

// lkLeased requires err to be a *RunLeasedError naming owner, matching both
// ErrRunLeased and ErrRunState.
func lkLeased(t testing.TB, err error, runID, owner string, expires time.Time) {
	t.Helper()
	var le *agentrt.RunLeasedError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *RunLeasedError", err)
	}
	if !errors.Is(err, agentrt.ErrRunLeased) || !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("%v does not match both ErrRunLeased and ErrRunState", err)
	}
	if le.RunID != runID || le.Owner != owner {
		t.Fatalf("leased error names run %q owner %q, want %q %q", le.RunID, le.Owner, runID, owner)
	}
	if !expires.IsZero() && !le.ExpiresAt.Equal(expires) {
		t.Fatalf("leased error expiry %s, want %s", le.ExpiresAt, expires)
	}
}

// A driver is deciding a step, its lease live, when a second process asks
// to resume the run, by Resume and by a gate's Attach. Both are refused with
// ErrRunLeased naming the holder and its expiry; no clock is read and no row
// changes. The holder's own driver is refused a second call too, and the
// run then completes as if nobody had asked.
func caseLease_ResumeOfALiveRunIsRefused(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	deciding, release := make(chan struct{}), make(chan struct{})
	agentA := agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
		close(deciding)
		<-release
		return lkComplete(), nil
	})
	dA := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, LeaseOwner: "holder", LeaseTTL: time.Minute}, Agent: agentA}, nil)
	done := lkGo(func() (agentrt.Run, error) { return dA.StartWithID(ctx, "run-1", "goal", agentrt.DefaultLimits()) })
	lkSignal(t, deciding, "the holder deciding")

	other := db.open(t)
	held := kit.MustRun(t, other, "run-1")
	if held.Status != agentrt.RunRunning || !strings.HasPrefix(held.LeaseOwner, "holder/") || held.Generation != 1 {
		t.Fatalf("running run: status %s owner %q generation %d", held.Status, held.LeaseOwner, held.Generation)
	}
	if !held.LeaseExpiresAt.After(time.Now()) {
		t.Fatalf("live lease expires at %s, in the past", held.LeaseExpiresAt)
	}
	before := db.snapshot(t)

	var clockReads atomic.Int64
	now := func() time.Time { clockReads.Add(1); return time.Now() }
	dB := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: other, Now: now, LeaseOwner: "other"}, Agent: lkNever(t)}, nil)
	run, err := dB.Resume(ctx, "run-1")
	lkLeased(t, err, "run-1", held.LeaseOwner, held.LeaseExpiresAt)
	if run.Status != agentrt.RunRunning {
		t.Errorf("refused Resume returned run status %s", run.Status)
	}
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: other, Policy: agentrt.DefaultPolicy(), Now: now, LeaseOwner: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := g.Attach(ctx, "run-1")
	lkLeased(t, err, "run-1", held.LeaseOwner, held.LeaseExpiresAt)
	if s != nil {
		t.Errorf("refused Attach returned a session")
	}
	if n := clockReads.Load(); n != 0 {
		t.Errorf("refused resumes read Config.Now %d times, want 0", n)
	}
	db.requireUnchanged(t, before, "a refused resume")

	// The holder's own driver refuses a second, concurrent call on the run.
	_, err = dA.Resume(ctx, "run-1")
	if !errors.Is(err, agentrt.ErrRunLeased) || !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("second call on the holder's driver: %v, want ErrRunLeased", err)
	}
	db.requireUnchanged(t, before, "a refused second call")

	close(release)
	out := lkAwait(t, done, "the holder's run")
	if out.err != nil || out.val.Status != agentrt.RunCompleted {
		t.Fatalf("holder's run: %s, %v", out.val.Status, out.err)
	}
	final := kit.MustRun(t, other, "run-1")
	if final.LeaseOwner != "" || final.Generation != 1 {
		t.Errorf("completed run keeps lease %q, generation %d", final.LeaseOwner, final.Generation)
	}
	if evs := kit.EventsOf(t, other, "run-1", agentrt.EventLeaseTakenOver); len(evs) != 0 {
		t.Errorf("a refused resume recorded %d takeovers", len(evs))
	}
}

// A driver ran a tool at step 0 and is deciding step 1 when another
// process, by whose clock the lease lapsed, takes the run over. The first
// driver's decision is refused at its next write: it returns ErrLeaseLost,
// its decision is not recorded, and the tool never runs for it again. In a
// second case the takeover happens while the tool runs: the late outcome is
// not recorded over the new owner's record.
func caseLease_LoopThatLosesItsLeaseStopsBeforeTheNextToolCall(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute

	t.Run("while deciding", func(t *testing.T) {
		st, db := lkOpen(t, bk)
		write := lkNewTool("write", agentrt.LocalMutation, nil)
		deciding, takenOver := make(chan struct{}), make(chan struct{})
		agentA := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if in.Steps.Len() == 0 {
				return lkCall("write", `{"n":0}`), nil
			}
			close(deciding)
			<-takenOver
			return lkCall("write", `{"n":1}`), nil
		})
		dA := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{write}, LeaseTTL: ttl, LeaseOwner: "a"}, Agent: agentA}, nil)
		doneA := lkGo(func() (agentrt.Run, error) { return dA.StartWithID(ctx, "run-1", "goal", agentrt.DefaultLimits()) })
		lkSignal(t, deciding, "step 1 deciding")
		ownerA := kit.MustRun(t, st, "run-1").LeaseOwner

		// B's clock is past A's lease; B decides step 2 once A has given up.
		wallB := lkNewWall()
		wallB.Advance(2 * ttl)
		bDeciding, aGone := make(chan struct{}), make(chan struct{})
		agentB := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			close(bDeciding)
			<-aGone
			return lkComplete(), nil
		})
		stB := db.open(t)
		db.lapseAll(t)
		dB := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: stB, Tools: []agentrt.Tool{write}, LeaseTTL: ttl, LeaseOwner: "b"}, Agent: agentB}, wallB)
		doneB := lkGo(func() (agentrt.Run, error) { return dB.Resume(ctx, "run-1") })
		lkSignal(t, bDeciding, "the new owner deciding")

		close(takenOver)
		outA := lkAwait(t, doneA, "the first owner's loop")
		if !errors.Is(outA.err, agentrt.ErrLeaseLost) {
			t.Fatalf("first owner returned %v, want ErrLeaseLost", outA.err)
		}
		close(aGone)
		outB := lkAwait(t, doneB, "the new owner's loop")
		if outB.err != nil || outB.val.Status != agentrt.RunCompleted {
			t.Fatalf("new owner: %s, %v", outB.val.Status, outB.err)
		}

		if got := write.args(); !reflect.DeepEqual(got, []string{`{"n":0}`}) {
			t.Errorf("tool calls %v, want only step 0's", got)
		}
		steps := kit.MustSteps(t, st, "run-1")
		if len(steps) != 3 {
			t.Fatalf("%d steps, want 3", len(steps))
		}
		if steps[1].Status != agentrt.StepInterrupted || steps[1].Decision != nil {
			t.Errorf("step 1: status %s decision %+v; want interrupted with no decision recorded", steps[1].Status, steps[1].Decision)
		}
		tk := kit.EventsOf(t, st, "run-1", agentrt.EventLeaseTakenOver)
		if len(tk) != 1 {
			t.Fatalf("%d lease.taken_over events, want 1", len(tk))
		}
		p := kit.Payload(t, tk[0])
		if p["previous_owner"] != ownerA || p["owner"] == ownerA || !strings.HasPrefix(p["owner"].(string), "b/") {
			t.Errorf("lease.taken_over payload %v", p)
		}
		if n := len(kit.EventsOf(t, st, "run-1", agentrt.EventToolStarted)); n != 1 {
			t.Errorf("%d tool starts, want 1", n)
		}
		if r := kit.MustRun(t, st, "run-1"); r.Generation != 2 || r.LeaseOwner != "" {
			t.Errorf("run generation %d lease %q; want 2 and released", r.Generation, r.LeaseOwner)
		}
	})

	t.Run("while a tool runs", func(t *testing.T) {
		st, db := lkOpen(t, bk)
		inTool, finishTool := make(chan struct{}), make(chan struct{})
		write := lkNewTool("write", agentrt.LocalMutation, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			close(inTool)
			<-finishTool
			return agentrt.ToolResult{Content: json.RawMessage(`{"late":true}`)}, nil
		})
		dA := lkDriver(t, agentrt.Config{
			EngineConfig: agentrt.EngineConfig{
				Store:    st,
				Tools:    []agentrt.Tool{write},
				LeaseTTL: ttl,
			},
			Agent: lkScript(t, lkCall("write", `{"n":0}`), lkCall("write", `{"n":1}`)),
		}, nil)
		doneA := lkGo(func() (agentrt.Run, error) { return dA.StartWithID(ctx, "run-1", "goal", agentrt.DefaultLimits()) })
		lkSignal(t, inTool, "the tool running")

		wallB := lkNewWall()
		wallB.Advance(2 * ttl)
		db.lapseAll(t)
		dB := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: []agentrt.Tool{write}, LeaseTTL: ttl}, Agent: lkNever(t)}, wallB)
		run, err := dB.Resume(ctx, "run-1")
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("takeover of an executing step: %s, %v; want it waiting for an operator", run.Status, err)
		}
		before := db.snapshot(t)

		close(finishTool)
		outA := lkAwait(t, doneA, "the first owner's loop")
		if !errors.Is(outA.err, agentrt.ErrLeaseLost) {
			t.Fatalf("first owner returned %s, %v; want ErrLeaseLost", outA.val.Status, outA.err)
		}
		db.requireUnchanged(t, before, "the first owner's late outcome")
		if got := write.args(); len(got) != 1 {
			t.Errorf("tool ran %d times, want 1", len(got))
		}
	})
}

// A loop's lease lapses by its own wall clock while its agent decides, and
// nobody takes the run. The loop starts no tool call, no model request, and
// no further step: it returns ErrLeaseLost, frees the run, and another
// process resumes it at once, deciding anew.
func caseLease_LapsedLeaseStartsNoSideEffect(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute

	t.Run("tool call", func(t *testing.T) {
		st, _ := lkOpen(t, bk)
		wall := lkNewWall()
		write := lkNewTool("write", agentrt.LocalMutation, nil)
		agent := agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			wall.Advance(ttl)
			return lkCall("write", `{"n":1}`), nil
		})
		d := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{write}, LeaseTTL: ttl}, Agent: agent}, wall)
		_, err := d.StartWithID(ctx, "run-1", "goal", agentrt.DefaultLimits())
		if !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("lapsed loop returned %v, want ErrLeaseLost", err)
		}
		if n := len(write.args()); n != 0 {
			t.Fatalf("a lapsed loop called the tool %d times", n)
		}
		if n := len(kit.EventsOf(t, st, "run-1", agentrt.EventToolStarted)); n != 0 {
			t.Fatalf("a lapsed loop recorded %d tool starts", n)
		}
		run := kit.MustRun(t, st, "run-1")
		if run.Status != agentrt.RunRunning || run.LeaseOwner != "" {
			t.Fatalf("lapsed run: %s leased to %q; want RUNNING and free", run.Status, run.LeaseOwner)
		}

		// Freed, the run is taken at once (no wait for the lapsed expiry),
		// and the step cut off before its tool is simply decided again.
		d2 := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{write}}, Agent: lkScript(t, lkCall("write", `{"n":1}`), lkComplete())}, nil)
		run, err = d2.Resume(ctx, "run-1")
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("resume: %s, %v", run.Status, err)
		}
		if n := len(write.args()); n != 0 {
			t.Fatalf("the call a lapsed loop was allowed ran %d times after the resume", n)
		}
		if s := kit.MustSteps(t, st, "run-1"); s[0].Status != agentrt.StepInterrupted {
			t.Errorf("step 0 is %s, want interrupted", s[0].Status)
		}
	})

	t.Run("model request", func(t *testing.T) {
		st, _ := lkOpen(t, bk)
		wall := lkNewWall()
		var dispatched atomic.Int64
		model := lkModel{generate: func(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
			dispatched.Add(1)
			return agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, Text: "hi", Usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}, nil
		}}
		var modelErr error
		agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			wall.Advance(ttl)
			_, modelErr = in.Model.Generate(ctx, agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser,
				Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hello"}}}}, MaxOutputTokens: 16})
			if modelErr != nil {
				return agentrt.Decision{}, modelErr
			}
			return lkComplete(), nil
		})
		d := lkDriver(t, agentrt.Config{
			EngineConfig: agentrt.EngineConfig{
				Store:    st,
				LeaseTTL: ttl,
				Model:    &agentrt.ModelConfig{Model: model, Prices: agentrt.PriceTable{"lk-model": {}}},
			},
			Agent: agent,
		}, wall)
		_, err := d.StartWithID(ctx, "run-1", "goal", agentrt.DefaultLimits())
		if !errors.Is(err, agentrt.ErrLeaseLost) || !errors.Is(modelErr, agentrt.ErrLeaseLost) {
			t.Fatalf("lapsed loop returned %v; the model call %v; want ErrLeaseLost for both", err, modelErr)
		}
		if n := dispatched.Load(); n != 0 {
			t.Fatalf("a lapsed loop dispatched %d model requests", n)
		}
		calls, err := st.ListModelCalls(ctx, "run-1")
		if err != nil || len(calls) != 0 {
			t.Fatalf("model calls recorded: %d, %v; want none", len(calls), err)
		}
		if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunRunning {
			t.Errorf("run is %s; a lost lease must not end it", r.Status)
		}
	})

	t.Run("next step", func(t *testing.T) {
		st, _ := lkOpen(t, bk)
		wall := lkNewWall()
		write := lkNewTool("write", agentrt.LocalMutation, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			wall.Advance(ttl) // a long call, with no heartbeat to renew the lease by this clock
			return agentrt.ToolResult{}, nil
		})
		var asked atomic.Int64
		script := lkScript(t, lkCall("write", `{"n":1}`), lkCall("write", `{"n":2}`))
		agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			asked.Add(1)
			return script(ctx, in)
		})
		d := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{write}, LeaseTTL: ttl}, Agent: agent}, wall)
		_, err := d.StartWithID(ctx, "run-1", "goal", agentrt.DefaultLimits())
		if !errors.Is(err, agentrt.ErrLeaseLost) {
			t.Fatalf("lapsed loop returned %v, want ErrLeaseLost", err)
		}
		if n := len(write.args()); n != 1 {
			t.Errorf("tool ran %d times, want 1", n)
		}
		if n := asked.Load(); n != 1 {
			t.Errorf("agent asked %d times, want 1", n)
		}
		steps := kit.MustSteps(t, st, "run-1")
		if len(steps) != 1 || steps[0].Status != agentrt.StepDone {
			t.Errorf("steps after the lapse: %d, first %s; want the one step, done", len(steps), steps[0].Status)
		}
	})
}

// Two drivers given the same LeaseOwner, as two processes started from one
// configuration would be, are two owners: each lease names its own, and
// neither can resume the other's live run. A driver restarted under the
// name waits out its previous life's lease like anyone else.
func caseLease_SameLeaseOwnerNameIsTwoOwners(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	stB := db.open(t)
	var deciding sync.WaitGroup
	deciding.Add(2)
	release := make(chan struct{})
	blocked := agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
		deciding.Done()
		<-release
		return lkComplete(), nil
	})
	dA := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, LeaseOwner: "worker"}, Agent: blocked}, nil)
	dB := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: stB, LeaseOwner: "worker"}, Agent: blocked}, nil)
	doneA := lkGo(func() (agentrt.Run, error) { return dA.StartWithID(ctx, "run-a", "goal", agentrt.DefaultLimits()) })
	doneB := lkGo(func() (agentrt.Run, error) { return dB.StartWithID(ctx, "run-b", "goal", agentrt.DefaultLimits()) })
	waited := make(chan struct{})
	go func() { deciding.Wait(); close(waited) }()
	lkSignal(t, waited, "both drivers deciding")

	a, b := kit.MustRun(t, st, "run-a"), kit.MustRun(t, st, "run-b")
	for _, r := range []agentrt.Run{a, b} {
		if !strings.HasPrefix(r.LeaseOwner, "worker/") || len(r.LeaseOwner) <= len("worker/") {
			t.Fatalf("run %s owner %q, want the name and a suffix", r.ID, r.LeaseOwner)
		}
	}
	if a.LeaseOwner == b.LeaseOwner {
		t.Fatalf("two drivers named worker share the owner %q", a.LeaseOwner)
	}
	before := db.snapshot(t)
	_, err := dB.Resume(ctx, "run-a")
	lkLeased(t, err, "run-a", a.LeaseOwner, a.LeaseExpiresAt)
	_, err = dA.Resume(ctx, "run-b")
	lkLeased(t, err, "run-b", b.LeaseOwner, b.LeaseExpiresAt)

	// A restart under the same name is a new owner.
	restarted := lkDriver(t, agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: db.open(t), LeaseOwner: "worker"}, Agent: lkNever(t)}, nil)
	_, err = restarted.Resume(ctx, "run-a")
	lkLeased(t, err, "run-a", a.LeaseOwner, a.LeaseExpiresAt)
	db.requireUnchanged(t, before, "refused resumes under a shared name")

	close(release)
	for _, ch := range []<-chan lkOutcome[agentrt.Run]{doneA, doneB} {
		if out := lkAwait(t, ch, "a worker's run"); out.err != nil || out.val.Status != agentrt.RunCompleted {
			t.Fatalf("worker run: %s, %v", out.val.Status, out.err)
		}
	}
}

// lkModel is a Model whose replies a test chooses.
type lkModel struct {
	generate func(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error)
}

func (m lkModel) Name() string { return "lk-model" }
func (m lkModel) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return m.generate(ctx, req)
}
