package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/scripted"
)

// Retention runs retention on a store of eight runs: five that ended before
// the cut (one of them FAILED), one that ended after it, one waiting on an
// approval, and one erased by hand first. A dry run changes nothing; a
// status filter erases only its runs; batches never exceed their bound; a
// retention stopped after its first batch leaves every run wholly erased
// or untouched, and a second one finishes the rest; runs after the cut
// and live runs are untouched, and the chain verifies with every erasure
// counted. Where the store keeps checkpoints, every event is folded before
// retention and again after: the checkpoint kept from before is extended,
// and every folded event, erased ones included, is still in the tree
// (erasure changes payloads, never the hashes the leaves are).
func Retention(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	set := func(at time.Time) {
		mu.Lock()
		now = at
		mu.Unlock()
	}
	echo := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
		SideEffect: agentrt.ReadOnly, Timeout: time.Minute}, Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: c.Args, Summary: "echoed"}, nil
	}}
	send := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "send", Description: "send", InputSchema: json.RawMessage(`{"type":"object"}`),
		SideEffect: agentrt.RemoteMutation, Timeout: time.Minute}, Fn: echo.Fn}
	start := func(id string, limits agentrt.Limits, ds ...agentrt.Decision) {
		t.Helper()
		d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: s, Policy: agentrt.DefaultPolicy(),
			Tools: []agentrt.Tool{echo, send}, Now: clock}, Agent: &scripted.Agent{Decisions: ds}})
		must(t, err)
		_, err = d.StartWithID(ctx, id, "goal of "+id, limits)
		must(t, err)
	}
	secret := func(id string) agentrt.Decision { return scripted.ToolCall("echo", `{"secret":"`+id+`"}`, "because") }
	for i, id := range []string{"old-0", "old-1", "old-2", "old-3"} {
		set(t0.Add(time.Duration(i) * time.Hour))
		start(id, agentrt.DefaultLimits(), secret(id), scripted.Complete(`{}`))
	}
	set(t0.Add(4 * time.Hour))
	one := agentrt.DefaultLimits()
	one.MaxSteps = 1
	start("old-failed", one, secret("old-failed"), secret("old-failed"))
	set(t0.Add(5 * time.Hour))
	start("hand", agentrt.DefaultLimits(), secret("hand"), scripted.Complete(`{}`))
	set(t0.Add(10 * time.Hour))
	start("new", agentrt.DefaultLimits(), secret("new"), scripted.Complete(`{}`))
	start("waiting", agentrt.DefaultLimits(), scripted.ToolCall("send", `{"secret":"waiting"}`, "because"))
	cut := t0.Add(8 * time.Hour)

	op := agentrt.Operator{Store: s, Now: clock}
	if _, err := op.Erase(ctx, "hand", "dpo", "asked"); err != nil {
		t.Fatal(err)
	}
	events := func(id string) []agentrt.Event {
		t.Helper()
		evs, err := s.ListEvents(ctx, id)
		must(t, err)
		return evs
	}
	erased := func(id string) bool {
		evs := events(id)
		return len(evs) > 0 && evs[len(evs)-1].Type == agentrt.EventRunErased
	}
	before := map[string][]agentrt.Event{}
	for _, id := range []string{"old-0", "old-1", "old-2", "old-3", "old-failed", "new", "waiting"} {
		before[id] = events(id)
	}
	untouched := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			now := events(id)
			if len(now) != len(before[id]) {
				t.Fatalf("run %s has %d events, had %d", id, len(now), len(before[id]))
			}
			for i := range now {
				if !bytes.Equal(now[i].Payload, before[id][i].Payload) {
					t.Fatalf("run %s's event %d changed: %s", id, now[i].Seq, now[i].Payload)
				}
			}
		}
	}

	cs, cerr := checkpoint.For(s)
	var kept checkpoint.Checkpoint
	if cerr == nil {
		kept = foldEvery(t, cs)
	}
	dry, err := op.Retain(ctx, agentrt.RetainOptions{FinishedBefore: cut, Batch: 2, DryRun: true, By: "retention", Reason: "policy"})
	must(t, err)
	if fmt.Sprint(dry.Would) != "[old-0 old-1 old-2 old-3 old-failed]" || dry.Erased != 0 {
		t.Fatalf("dry run = %+v, want the five old runs oldest first and nothing erased", dry)
	}
	untouched("old-0", "old-1", "old-2", "old-3", "old-failed", "new", "waiting")

	failed, err := op.Retain(ctx, agentrt.RetainOptions{FinishedBefore: cut, Statuses: []agentrt.RunStatus{agentrt.RunFailed}, By: "retention", Reason: "policy"})
	must(t, err)
	if failed.Erased != 1 || !erased("old-failed") {
		t.Fatalf("retaining FAILED runs = %+v", failed)
	}
	untouched("old-0", "old-1", "old-2", "old-3", "new", "waiting")

	// A retention that stops (a crash, a signal) after its first batch.
	stop := errors.New("stopped")
	var sizes []int
	part, err := op.Retain(ctx, agentrt.RetainOptions{FinishedBefore: cut, Batch: 3, By: "retention", Reason: "policy",
		Progress: func(b []agentrt.ErasedRun) error { sizes = append(sizes, len(b)); return stop }})
	if !errors.Is(err, stop) || part.Erased != 3 || fmt.Sprint(sizes) != "[3]" {
		t.Fatalf("stopped retention = %+v, %v, batches %v", part, err, sizes)
	}
	for _, id := range []string{"old-0", "old-1", "old-2"} {
		if !erased(id) {
			t.Fatalf("run %s, in the first batch, is not erased", id)
		}
	}
	untouched("old-3", "new", "waiting")

	sizes = nil
	rest, err := op.Retain(ctx, agentrt.RetainOptions{FinishedBefore: cut, Batch: 3, By: "retention", Reason: "policy",
		Progress: func(b []agentrt.ErasedRun) error { sizes = append(sizes, len(b)); return nil }})
	must(t, err)
	if rest.Erased != 1 || fmt.Sprint(sizes) != "[1]" || !erased("old-3") {
		t.Fatalf("the resumed retention = %+v, batches %v", rest, sizes)
	}
	untouched("new", "waiting")
	again, err := op.Retain(ctx, agentrt.RetainOptions{FinishedBefore: cut, By: "retention", Reason: "policy"})
	must(t, err)
	if again.Erased != 0 {
		t.Fatalf("a third retention erased %d runs; the first two left none", again.Erased)
	}
	for _, id := range []string{"old-0", "old-1", "old-2", "old-3", "old-failed", "hand"} {
		for _, ev := range events(id) {
			if bytes.Contains(ev.Payload, []byte(`"secret"`)) || bytes.Contains(ev.Payload, []byte("goal of")) {
				t.Fatalf("erased run %s's event %d holds content: %s", id, ev.Seq, ev.Payload)
			}
		}
		steps, err := s.ListSteps(ctx, id)
		must(t, err)
		for _, st := range steps {
			if st.Decision != nil && len(st.Decision.Args) > 0 || st.Observation != nil && len(st.Observation.Content) > 0 {
				t.Fatalf("erased run %s's step %d holds content", id, st.Index)
			}
		}
		r, err := s.GetRun(ctx, id)
		must(t, err)
		if r.Goal != "" {
			t.Fatalf("erased run %s keeps its goal %q", id, r.Goal)
		}
	}
	rep, err := s.VerifyEvents(ctx, 0, 0)
	must(t, err)
	if rep.Break != nil || rep.ErasedRunCount != 6 || rep.Erased == 0 {
		t.Fatalf("verify = %+v; want intact with six erased runs", rep)
	}
	if cerr != nil {
		return
	}
	latest := foldEvery(t, cs)
	all, err := s.ListEvents(ctx, "")
	must(t, err)
	cr, err := checkpoint.Verify(ctx, cs, checkpoint.VerifyOptions{Kept: &kept, Now: clock})
	must(t, err)
	if cr.Problem != nil || !cr.KeptExtended || cr.Leaves != int64(len(all)) || latest.Size != int64(len(all)) || kept.Size >= latest.Size {
		t.Fatalf("checkpoints after retention = %+v (problem %+v); want the checkpoint of %d kept before it extended to all %d events, each included",
			cr, cr.Problem, kept.Size, len(all))
	}
}

// foldEvery folds until no event is left unfolded (on PostgreSQL the
// watermark may hold some back while other transactions run) and returns
// the latest checkpoint.
func foldEvery(t *testing.T, cs checkpoint.Store) checkpoint.Checkpoint {
	t.Helper()
	ctx := context.Background()
	in, err := checkpoint.NewIntegrator(cs, checkpoint.Config{})
	must(t, err)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, _, _, err := in.Fold(ctx)
		must(t, err)
		n, _, err := cs.CheckpointUnfolded(ctx, time.Now().Add(24*365*time.Hour))
		must(t, err)
		if n == 0 {
			c, ok, err := cs.CheckpointLatest(ctx)
			must(t, err)
			if !ok {
				t.Fatal("every event is folded but there is no checkpoint")
			}
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events still unfolded after a minute of folding", n)
		}
	}
}
