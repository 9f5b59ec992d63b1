package proxy

import (
	"context"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
)

// countCommits makes the next proxies' gates write through a counting
// store, until the test ends. The test must not run in parallel.
func countCommits(t testing.TB) *enginekit.CountingStore {
	c := new(enginekit.CountingStore)
	old := gateStore
	gateStore = func(st agentrt.Store) agentrt.Store { return c.Wrap(t, st) }
	t.Cleanup(func() { gateStore = old })
	return c
}

// An allowed proxied call commits at most twice: its run's creation with
// the step's opening, decision, policy decision and tool start, then the
// outcome with the run's end (the proxy makes one call per run). Counted
// as TestDriver_AtMostThreeCommitsPerToolStep counts the Driver's commits.
// The record stays whole: each call's run holds its events, ended, and the
// chain verifies.
func TestProxy_AllowedCallCommitsAtMostTwice(t *testing.T) {
	c := countCommits(t)
	h := newHarness(t, nil)
	for i, args := range []string{`{"path":"a"}`, `{"path":"b"}`, `{"path":"c"}`} {
		before := c.Commits()
		if res := h.call("up_read", args); res.IsError {
			t.Fatalf("call %d: %s", i, text(res))
		}
		if got := c.Commits() - before; got > 2 {
			t.Errorf("allowed call %d made %d commits, want at most 2", i, got)
		}
	}
	st := h.p.Store()
	runs, err := st.ListRuns(context.Background())
	if err != nil || len(runs) != 3 {
		t.Fatalf("%d runs, %v; want one per call", len(runs), err)
	}
	for _, r := range runs {
		if !r.Status.Terminal() {
			t.Errorf("run %s is %s after its call, want ended", r.ID, r.Status)
		}
		evs, err := st.ListEvents(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var types []agentrt.EventType
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		for _, want := range []agentrt.EventType{agentrt.EventRunCreated, agentrt.EventStepDecided, agentrt.EventStepPolicy,
			agentrt.EventToolStarted, agentrt.EventToolFinished, agentrt.EventRunFinished} {
			if !hasEvent(types, want) {
				t.Errorf("run %s records %v, without %s", r.ID, types, want)
			}
		}
	}
	if rep, err := st.VerifyEvents(context.Background(), 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

func hasEvent(types []agentrt.EventType, want agentrt.EventType) bool {
	for _, ty := range types {
		if ty == want {
			return true
		}
	}
	return false
}
