package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/scripted"
)

// finishes is an Observer that reports each run.finished on a channel.
type finishes struct {
	ch chan agentrt.Event
}

func newFinishes(n int) *finishes { return &finishes{ch: make(chan agentrt.Event, n)} }

func (f *finishes) observe(ev agentrt.Event) {
	if ev.Type == agentrt.EventRunFinished {
		f.ch <- ev
	}
}

// await waits for n run.finished events, failing after a generous bound.
func (f *finishes) await(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-f.ch:
		case <-deadline:
			t.Fatalf("only %d of %d runs finished", i, n)
		}
	}
}

func startWorker(t *testing.T, cfg agentrt.WorkerConfig) (*agentrt.Worker, func()) {
	t.Helper()
	w, err := agentrt.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return w, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker Run = %v", err)
		}
	}
}

// requireSteps checks a run's steps are indexed 0..n-1 with no gap, and
// that no step holds two decisions (one row per index).
func requireSteps(t *testing.T, st agentrt.StoreReader, runID string, n int) {
	t.Helper()
	steps := kit.MustSteps(t, st, runID)
	if len(steps) != n {
		t.Fatalf("run %s has %d steps, want %d", runID, len(steps), n)
	}
	for i, s := range steps {
		if s.Index != i {
			t.Fatalf("run %s: step %d has index %d", runID, i, s.Index)
		}
	}
}

// Two workers share twenty enqueued runs on one SQLite file: each run is
// claimed once, completes, calls its tool exactly once, and the chain
// verifies with a claim recorded for every run.
func caseWorker_SharesEnqueuedRunsAndRunsEachOnce(t *testing.T, bk *Backend) {
	st := openStore(t, bk)
	var mu sync.Mutex
	calls := map[string]int{}
	tool := kit.NewTool("note", agentrt.ReadOnly, `{"type":"object"}`, func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
		mu.Lock()
		calls[c.RunID]++
		mu.Unlock()
		return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	})
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("note", `{}`, "note it"), scripted.Complete(`{"done":true}`)}}
	const n = 20
	fin := newFinishes(n)
	cfg := agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:    st,
			Policy:   agentrt.DefaultPolicy(),
			Tools:    []agentrt.Tool{tool},
			Observer: fin.observe,
		},
		Agent:       agent,
		Concurrency: 3,
		Poll:        5 * time.Millisecond,
	}
	w1, stop1 := startWorker(t, cfg)
	_, stop2 := startWorker(t, cfg)
	var ids []string
	for i := 0; i < n; i++ {
		r, err := w1.Driver().Enqueue(context.Background(), fmt.Sprintf("goal %d", i), agentrt.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != agentrt.RunEnqueued || r.LeaseOwner != "" {
			t.Fatalf("enqueued run = %+v", r)
		}
		ids = append(ids, r.ID)
	}
	fin.await(t, n)
	stop1()
	stop2()
	for _, id := range ids {
		r := kit.MustRun(t, st, id)
		if r.Status != agentrt.RunCompleted || r.LeaseOwner != "" {
			t.Errorf("run %s is %s held by %q, want COMPLETED and released", id, r.Status, r.LeaseOwner)
		}
		if calls[id] != 1 {
			t.Errorf("run %s called its tool %d times, want once", id, calls[id])
		}
		requireSteps(t, st, id, 2)
		if got := len(kit.EventsOf(t, st, id, agentrt.EventRunClaimed)); got != 1 {
			t.Errorf("run %s has %d claims recorded, want 1", id, got)
		}
	}
	rep, err := st.VerifyEvents(context.Background(), 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// A run paused on an approval resumes by itself once it is approved: the
// worker claims it, runs the approved call once, and completes it.
func caseWorker_ApprovedRunResumesByItself(t *testing.T, bk *Backend) {
	st := openStore(t, bk)
	tool := kit.NewTool("send", agentrt.RemoteMutation, `{"type":"object"}`, nil)
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{"to":"x"}`, "send it"), scripted.Complete(`{}`)}}
	paused := make(chan struct{}, 1)
	fin := newFinishes(1)
	observe := func(ev agentrt.Event) {
		if ev.Type == agentrt.EventApprovalRequest {
			paused <- struct{}{}
		}
		fin.observe(ev)
	}
	w, stop := startWorker(t, agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:    st,
			Policy:   agentrt.DefaultPolicy(),
			Tools:    []agentrt.Tool{tool},
			Observer: observe,
		},
		Agent: agent,
		Poll:  5 * time.Millisecond,
	})
	defer stop()
	ctx := context.Background()
	r, err := w.Driver().Enqueue(ctx, "send x", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never asked for approval")
	}
	apps := kit.MustApprovals(t, st, r.ID)
	if len(apps) != 1 || tool.N() != 0 {
		t.Fatalf("approvals %d, tool calls %d before the decision", len(apps), tool.N())
	}
	if err := agentrt.ApproveShown(ctx, st, nil, r.ID, apps[0].ID, apps[0].Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	fin.await(t, 1)
	if got := kit.MustRun(t, st, r.ID); got.Status != agentrt.RunCompleted || tool.N() != 1 {
		t.Fatalf("after approval: run %s, tool calls %d; want COMPLETED and one call", got.Status, tool.N())
	}
	if got := len(kit.EventsOf(t, st, r.ID, agentrt.EventRunClaimed)); got != 2 {
		t.Fatalf("claims recorded = %d, want 2 (enqueued, then approved)", got)
	}
}

// A run whose holder died (its lease lapsed, a read-only call in flight) is
// taken over: the claim is recorded as a takeover naming the previous
// owner, the interrupted step is marked, and the run completes.
func caseWorker_TakesOverALapsedLease(t *testing.T, bk *Backend) {
	st := openStore(t, bk)
	insertLapsedRun(t, st)
	fin := newFinishes(1)
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.Complete(`{}`)}}
	_, stop := startWorker(t, agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Observer: fin.observe}, Agent: agent, Poll: 5 * time.Millisecond})
	fin.await(t, 1)
	stop()
	r := kit.MustRun(t, st, "r1")
	if r.Status != agentrt.RunCompleted || r.Generation < 3 {
		t.Fatalf("run = %s at generation %d, want COMPLETED past generation 1 (claim, takeover)", r.Status, r.Generation)
	}
	tk := kit.EventsOf(t, st, "r1", agentrt.EventLeaseTakenOver)
	if len(tk) != 1 || kit.Payload(t, tk[0])["previous_owner"] != "dead" {
		t.Fatalf("takeovers = %v, want one naming the dead owner", tk)
	}
}

// A worker told to stop lets the call in flight finish, ends the run at
// that step boundary with its lease released, and another worker finishes
// it without running the call again.
func caseWorker_StopsAtAStepBoundaryAndReleasesTheLease(t *testing.T, bk *Backend) {
	st := openStore(t, bk)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	tool := kit.NewTool("slow", agentrt.LocalMutation, `{"type":"object"}`, func(ctx context.Context, _ agentrt.ToolCall) (agentrt.ToolResult, error) {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
			return agentrt.ToolResult{}, ctx.Err()
		}
		return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	})
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("slow", `{}`, "slowly"), scripted.Complete(`{}`)}}
	cfg := agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Policy: agentrt.DefaultPolicy(),
			Tools:  []agentrt.Tool{tool},
		},
		Agent: agent,
		Poll:  5 * time.Millisecond,
		Grace: time.Minute,
	}
	w, err := agentrt.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Driver().Enqueue(ctx, "slow", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	<-started
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a call was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := kit.MustRun(t, st, r.ID)
	steps := kit.MustSteps(t, st, r.ID)
	if got.Status != agentrt.RunRunning || got.LeaseOwner != "" || len(steps) != 1 || steps[0].Status != agentrt.StepDone || tool.N() != 1 {
		t.Fatalf("after stop: run %s owner %q, %d steps (%v), %d calls; want RUNNING, released, one done step, one call",
			got.Status, got.LeaseOwner, len(steps), steps, tool.N())
	}
	fin := newFinishes(1)
	cfg.Observer = fin.observe
	_, stop := startWorker(t, cfg)
	fin.await(t, 1)
	stop()
	if got := kit.MustRun(t, st, r.ID); got.Status != agentrt.RunCompleted || tool.N() != 1 {
		t.Fatalf("second worker: run %s, %d calls; want COMPLETED, one call", got.Status, tool.N())
	}
	requireSteps(t, st, r.ID, 2)
}

// The config is checked field by field.
func caseWorker_ConfigIsValidated(t *testing.T, bk *Backend) {
	st := openStore(t, bk)
	for _, c := range []struct {
		cfg   agentrt.WorkerConfig
		field string
	}{
		{agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy()}, Agent: kit.Script(), Concurrency: -1}, "WorkerConfig.Concurrency"},
		{agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy()}, Agent: kit.Script(), Poll: -1}, "WorkerConfig.Poll"},
		{agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy()}, Agent: kit.Script(), Grace: -1}, "WorkerConfig.Grace"},
		{agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy()}}, "Config.Agent"},
	} {
		_, err := agentrt.NewWorker(c.cfg)
		var ce *agentrt.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("NewWorker = %v, want a ConfigError on %s", err, c.field)
		}
	}
}

// insertLapsedRun writes run r1 as a process that died an hour ago left it:
// RUNNING, leased to "dead" until an hour ago.
func insertLapsedRun(t *testing.T, st agentrt.Store) {
	t.Helper()
	past := time.Now().Add(-time.Hour).UTC()
	_, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: "r1", Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(),
			CreatedAt: past, StartedAt: past, LeaseOwner: "dead", LeaseExpiresAt: past, Generation: 1}); err != nil {
			return err
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: past, Type: agentrt.EventRunCreated})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
