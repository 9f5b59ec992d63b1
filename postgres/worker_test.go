package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/agentrt/agentrt/scripted"
)

// Four workers, each with its own store (as four processes would have),
// share forty enqueued runs on one Postgres database: every run completes,
// its tool ran once, its lease times are the database's, and the one chain
// verifies.
func TestWorker_FourWorkersShareOneDatabase(t *testing.T) {
	dsn := pgtest.Fresh(t)
	ctx := context.Background()
	var mu sync.Mutex
	calls := map[string]int{}
	tool := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "note", Description: "note", SideEffect: agentrt.LocalMutation, Timeout: 10 * time.Second,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			mu.Lock()
			calls[c.RunID]++
			mu.Unlock()
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
		},
	}
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("note", `{}`, "a"), scripted.ToolCall("note", `{}`, "b"), scripted.Complete(`{}`)}}
	const n = 40
	finished := make(chan string, n)
	var stops []func()
	var first *agentrt.Worker
	for i := 0; i < 4; i++ {
		st := open(t, dsn)
		t.Cleanup(func() { st.Close() })
		w, err := agentrt.NewWorker(agentrt.WorkerConfig{
			EngineConfig: agentrt.EngineConfig{
				Store:      st,
				Policy:     agentrt.DefaultPolicy(),
				Tools:      []agentrt.Tool{tool},
				LeaseOwner: fmt.Sprintf("w%d", i),
				Observer: func(ev agentrt.Event) {
					if ev.Type == agentrt.EventRunFinished {
						finished <- ev.RunID
					}
				},
			},
			Agent:       agent,
			Concurrency: 4,
			Poll:        10 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = w
		}
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(wctx) }()
		stops = append(stops, func() { cancel(); <-done })
	}
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		r, err := first.Driver().Enqueue(ctx, "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		ids[r.ID] = true
	}
	timeout := time.After(2 * time.Minute)
	for i := 0; i < n; i++ {
		select {
		case <-finished:
		case <-timeout:
			t.Fatalf("only %d of %d runs finished", i, n)
		}
	}
	for _, stop := range stops {
		stop()
	}
	st := open(t, dsn)
	defer st.Close()
	for id := range ids {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != agentrt.RunCompleted || calls[id] != 2 {
			t.Errorf("run %s: %s, %d calls; want COMPLETED and 2", id, r.Status, calls[id])
		}
		steps, _ := st.ListSteps(ctx, id)
		for i, s := range steps {
			if s.Index != i {
				t.Errorf("run %s: step %d has index %d", id, i, s.Index)
			}
		}
		if len(steps) != 3 {
			t.Errorf("run %s has %d steps, want 3", id, len(steps))
		}
	}
	rep, err := st.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}

// A lease taken on Postgres expires by the database's clock: the stored
// expiry is the database's now plus the TTL, whatever the engine's clock
// (Config.Now, here an hour behind) says.
func TestLease_ExpiryIsOnTheDatabaseClock(t *testing.T) {
	dsn := pgtest.Fresh(t)
	ctx := context.Background()
	st := open(t, dsn)
	defer st.Close()
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:    st,
			Policy:   agentrt.DefaultPolicy(),
			Now:      behind,
			LeaseTTL: time.Minute,
		},
		Agent: agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			r, err := st.GetRun(ctx, in.Run.ID)
			if err != nil {
				return agentrt.Decision{}, err
			}
			now, err := st.DatabaseNow(ctx)
			if err != nil {
				return agentrt.Decision{}, err
			}
			if d := r.LeaseExpiresAt.Sub(now); d < 50*time.Second || d > 61*time.Second {
				return agentrt.Decision{}, fmt.Errorf("lease expires %s after the database's now, want about a minute", d)
			}
			return scripted.Complete(`{}`), nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Start(ctx, "g", agentrt.DefaultLimits())
	if err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("run = %s %s, %v", r.Status, r.ReasonDetail, err)
	}
}

// An idle worker that would not poll for an hour is woken by the database:
// a run enqueued by another process's store, and then its approval decided
// by a third, are each claimed within seconds (LISTEN/NOTIFY, migration
// 0004's and 0012's triggers).
func TestWorker_NotifyWakesAnIdleWorker(t *testing.T) {
	dsn := pgtest.Fresh(t)
	ctx := context.Background()
	st := open(t, dsn)
	defer st.Close()
	send := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "send", Description: "send", SideEffect: agentrt.RemoteMutation, Timeout: 10 * time.Second,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{}`)}, nil
		},
	}
	agent := &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{}`, "s"), scripted.Complete(`{}`)}}
	w, err := agentrt.NewWorker(agentrt.WorkerConfig{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{send}},
		Agent:        agent, Poll: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // the worker's first claim found nothing; it is idle now

	other := open(t, dsn)
	defer other.Close()
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: other, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{send}}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Enqueue(ctx, "g", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, want agentrt.RunStatus) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := other.GetRun(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the run is still %s after 10s; the worker was not woken", what, got.Status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("enqueued", agentrt.RunWaiting)
	apps, err := other.ListApprovals(ctx, r.ID)
	if err != nil || len(apps) != 1 {
		t.Fatalf("approvals = %d, %v", len(apps), err)
	}
	if err := agentrt.ApproveShown(ctx, other, nil, r.ID, apps[0].ID, apps[0].Hash, "op", "ok"); err != nil {
		t.Fatal(err)
	}
	waitFor("approved", agentrt.RunCompleted)
}
