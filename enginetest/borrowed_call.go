package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/testkit/adaptertest"
)

// Gate.Call: one call of a framework's hook, with the mechanism every
// adapter shares (its session on the run, its earlier record by call id
// and request key, its granted step, its turn's siblings).

// bcBody is a spec-only tool's body that counts its calls, runs fn first
// (when set) and returns {"ok":true}.
type bcBody struct {
	n  atomic.Int64
	fn func()
}

func (b *bcBody) body(context.Context, json.RawMessage) (json.RawMessage, error) {
	b.n.Add(1)
	if b.fn != nil {
		b.fn()
	}
	return json.RawMessage(`{"ok":true}`), nil
}

func bcCall(run, id, tool, args string, body *bcBody) agentrt.Call {
	return agentrt.Call{RunID: run, CallID: id, Tool: tool, Args: json.RawMessage(args), Body: body.body}
}

// bcPending makes call c through g without waiting, and requires it to
// come back pending an operator's approval, which it returns.
func bcPending(t testing.TB, g *agentrt.Gate, c agentrt.Call) *agentrt.Approval {
	t.Helper()
	c.NoWait = true
	res, err := g.Call(context.Background(), c)
	if err != nil || res.Pending == nil {
		t.Fatalf("call %s of %s: %+v, %v; want it pending", c.CallID, c.RunID, res, err)
	}
	return res.Pending
}

// bcGo makes call c through g on its own goroutine.
func bcGo(g *agentrt.Gate, c agentrt.Call) <-chan lkOutcome[agentrt.CallResult] {
	return lkGo(func() (agentrt.CallResult, error) { return g.Call(context.Background(), c) })
}

// A turn of three calls announced with Gate.Turn, each Call on its own
// goroutine: a write the policy sends to an operator and two reads that
// arrive after the write opened its step (so the write, proposed at once,
// would pause the run and hold them: it waits for its turn). The policy
// reports how many reads it had judged when it judges the write: both,
// or the write did not wait for its turn (without Turn it is judged
// before its step opens, so before the reads are even made). The reads'
// bodies each return only once the other runs and the write's approval
// was requested: the write waits alone, and the reads run side by side
// meanwhile. Once they are done the run waits; approved, the write's own
// Call runs its body once, and the chain verifies.
func caseGate_CallRunsAllowedSiblingsWhileAWriteWaits(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	var evs adaptertest.Events
	var readsJudged atomic.Int64
	writeJudged := make(chan int64, 1)
	policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		if req.Spec.Name == "read" {
			readsJudged.Add(1)
		} else {
			select {
			case writeJudged <- readsJudged.Load():
			default: // judged again at its grant
			}
		}
		return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
	})
	tools := []agentrt.Tool{agentrt.SpecOnly(bwSpec("read", agentrt.ReadOnly)), agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))}
	g := lkGate(t, agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{Store: st, Tools: tools, Policy: policy, Observer: evs.Observe}}, nil)
	t.Cleanup(g.Close)
	var both sync.WaitGroup
	both.Add(2)
	read := &bcBody{fn: func() {
		both.Done()
		both.Wait()
		<-evs.On(agentrt.EventApprovalRequest)
	}}
	send := &bcBody{}
	g.Turn("run-1", "w", "r1", "r2")
	wc := bcCall("run-1", "w", "send", `{"text":"x"}`, send)
	wc.TurnWait = lkWait // however slow the reads' commits, the write waits for them
	w := bcGo(g, wc)
	// The reads reach the gate only after the write opened its step.
	lkSignal(t, evs.On(agentrt.EventStepStarted), "the write's step")
	r1 := bcGo(g, bcCall("run-1", "r1", "read", `{"n":1}`, read))
	r2 := bcGo(g, bcCall("run-1", "r2", "read", `{"n":2}`, read))
	if n := lkAwait(t, writeJudged, "the write's judgement"); n != 2 {
		t.Fatalf("the write was judged after %d of its turn's reads, want both: it did not wait for its turn", n)
	}
	for _, r := range []<-chan lkOutcome[agentrt.CallResult]{r1, r2} {
		if got := lkAwait(t, r, "a read"); got.err != nil || got.val.Observation.Kind != agentrt.ObsToolResult {
			t.Fatalf("a read: %+v, %v", got.val, got.err)
		}
	}
	if n := send.n.Load(); n != 0 {
		t.Fatalf("the write ran %d times before its approval", n)
	}
	lkSignal(t, evs.On(agentrt.EventRunWaiting), "the run waiting once the reads ended")
	a := kit.PendingApproval(t, st, "run-1")
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	got := lkAwait(t, w, "the write")
	if got.err != nil || got.val.Observation.Kind != agentrt.ObsToolResult || send.n.Load() != 1 || read.n.Load() != 2 {
		t.Fatalf("the write: %+v, %v; send ran %d, read %d", got.val, got.err, send.n.Load(), read.n.Load())
	}
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// A call made again with its call id collects its recorded outcome and
// runs nothing; a pending write asked again with NoWait comes back with
// the same approval and opens no other; another gate's call of the
// identical request under a new run collects that approval, and once it
// is granted runs its body once in the first run, which holds the only
// approval. A rejected write asked again reads its recorded failure.
func caseGate_CallCollectsWhatIsRecordedInsteadOfAskingAgain(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, db := lkOpen(t, bk)
	tools := []agentrt.Tool{agentrt.SpecOnly(bwSpec("read", agentrt.ReadOnly)), agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))}
	cfg := agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{Store: st, Tools: tools}}
	g := lkGate(t, cfg, nil)
	t.Cleanup(g.Close)
	read, send := &bcBody{}, &bcBody{}
	first, err := g.Call(ctx, bcCall("run-a", "r", "read", `{"n":1}`, read))
	again, err2 := g.Call(ctx, bcCall("run-a", "r", "read", `{"n":1}`, read))
	if err != nil || err2 != nil || read.n.Load() != 1 || again.StepID != first.StepID || string(again.Observation.Content) != `{"ok":true}` {
		t.Fatalf("a read made twice: %+v, %+v, %v, %v; body ran %d times", first, again, err, err2, read.n.Load())
	}
	w := bcCall("run-a", "w", "send", `{"text":"x"}`, send)
	w.NoWait = true
	p1, err := g.Call(ctx, w)
	p2, err2 := g.Call(ctx, w)
	if err != nil || err2 != nil || p1.Pending == nil || p2.Pending == nil || p1.Pending.ID != p2.Pending.ID {
		t.Fatalf("a pending write asked twice: %+v, %+v, %v, %v", p1, p2, err, err2)
	}
	cfg.Store = db.open(t)
	g2 := lkGate(t, cfg, nil)
	t.Cleanup(g2.Close)
	collected := bcGo(g2, bcCall("run-b", "w2", "send", `{"text":"x"}`, send))
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-a", p1.Pending.ID, p1.Pending.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	got := lkAwait(t, collected, "the collecting call")
	if got.err != nil || got.val.RunID != "run-a" || got.val.Observation.Kind != agentrt.ObsToolResult || send.n.Load() != 1 {
		t.Fatalf("the collecting call: %+v, %v; send ran %d times", got.val, got.err, send.n.Load())
	}
	if n := len(kit.MustApprovals(t, st, "run-b")); n != 0 {
		t.Fatalf("run-b has %d approvals, want none", n)
	}
	rej := bcCall("run-c", "w3", "send", `{"text":"y"}`, send)
	a := bcPending(t, g, rej)
	if err := (agentrt.Operator{Store: st}).RejectShown(ctx, "run-c", a.ID, a.Hash, "op", "no"); err != nil {
		t.Fatal(err)
	}
	if got, err := g.Call(ctx, rej); err != nil || !got.Observation.Failure() || send.n.Load() != 1 {
		t.Fatalf("the rejected write asked again: %+v, %v; send ran %d times", got, err, send.n.Load())
	}
}

// A process dies while a call's body runs. Another gate, once the lease
// lapsed, is handed the same call: it runs nothing, asks the one
// approval that says the call was cut off, and awaits it; approved, the
// body runs once more, and the run holds that approval only.
func caseGate_CallCutOffByACrashAsksOnceAndRunsOnce(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Minute
	st, db := lkOpen(t, bk)
	tools := []agentrt.Tool{agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))}
	allow := agentrt.SideEffectPolicy{agentrt.RemoteMutation: agentrt.Allow}
	gA := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: tools, Policy: allow, LeaseTTL: ttl}}, nil)
	inBody, finish := make(chan struct{}), make(chan struct{})
	dead := &bcBody{fn: func() { close(inBody); <-finish }}
	crashed := bcGo(gA, bcCall("run-1", "c", "send", `{"text":"x"}`, dead))
	lkSignal(t, inBody, "the body running")

	var evs adaptertest.Events
	gB := lkGate(t, agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{Store: db.open(t), Tools: tools,
		Policy: allow, LeaseTTL: ttl, Observer: evs.Observe}}, db.later(t, 1, ttl))
	t.Cleanup(gB.Close)
	again := &bcBody{}
	retried := bcGo(gB, bcCall("run-1", "c", "send", `{"text":"x"}`, again))
	lkSignal(t, evs.On(agentrt.EventApprovalRequest), "the interruption's approval")
	close(finish)
	lkAwait(t, crashed, "the abandoned call")
	apps := kit.MustApprovals(t, st, "run-1")
	if len(apps) != 1 || apps[0].Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(apps[0].Presentation), "may already have taken effect") || again.n.Load() != 0 {
		t.Fatalf("after the crash: approvals %+v, body ran %d times", apps, again.n.Load())
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", apps[0].ID, apps[0].Hash, "op", "run it again"); err != nil {
		t.Fatal(err)
	}
	got := lkAwait(t, retried, "the call after the approval")
	if got.err != nil || got.val.Observation.Kind != agentrt.ObsToolResult || again.n.Load() != 1 || dead.n.Load() != 1 {
		t.Fatalf("after the approval: %+v, %v; bodies ran %d and %d times", got.val, got.err, dead.n.Load(), again.n.Load())
	}
	if n := len(kit.MustApprovals(t, st, "run-1")); n != 1 {
		t.Fatalf("the run has %d approvals, want the one", n)
	}
}

// What Call cannot run it refuses, changing nothing: a call while the run
// waits on another call's approval (NoWait), and any call once Gate.Complete
// ended the run (ErrRunEnded too); a Call without a body is an error.
func caseGate_CallRefusesWhatItCannotRun(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	tools := []agentrt.Tool{agentrt.SpecOnly(bwSpec("read", agentrt.ReadOnly)), agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))}
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: tools}}, nil)
	t.Cleanup(g.Close)
	body := &bcBody{}
	if _, err := g.Call(ctx, agentrt.Call{RunID: "run-1", Tool: "read"}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("a call without a body: %v", err)
	}
	a := bcPending(t, g, bcCall("run-1", "w", "send", `{"text":"x"}`, body))
	r := bcCall("run-1", "r", "read", `{"n":1}`, body)
	r.NoWait = true
	if _, err := g.Call(ctx, r); !errors.Is(err, agentrt.ErrCallRefused) || !strings.Contains(err.Error(), a.ID) || body.n.Load() != 0 {
		t.Fatalf("a read while the run waits: %v; body ran %d times", err, body.n.Load())
	}
	if err := g.Complete(ctx, "run-1", nil); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("Complete of a waiting run: %v", err)
	}
	if _, err := g.Call(ctx, bcCall("run-2", "r", "read", `{"n":1}`, body)); err != nil {
		t.Fatal(err)
	}
	if err := g.Complete(ctx, "run-2", json.RawMessage(`{"done":true}`)); err != nil {
		t.Fatal(err)
	}
	if run := kit.MustRun(t, st, "run-2"); run.Status != agentrt.RunCompleted {
		t.Fatalf("run-2 is %s", run.Status)
	}
	_, err := g.Call(ctx, bcCall("run-2", "r2", "read", `{"n":2}`, body))
	if !errors.Is(err, agentrt.ErrRunEnded) || !errors.Is(err, agentrt.ErrCallRefused) || body.n.Load() != 1 {
		t.Fatalf("a call after the end: %v; body ran %d times", err, body.n.Load())
	}
}
