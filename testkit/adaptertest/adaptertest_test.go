package adaptertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
)

// testGate is a gate over st with the default policy and one tool, named
// name and of class class, whose events evs hears; it closes when t ends.
func testGate(t *testing.T, st agentrt.Store, evs *Events, name string, class agentrt.SideEffect) *agentrt.Gate {
	t.Helper()
	spec := agentrt.SpecOnly(agentrt.ToolSpec{Name: name, Description: "The " + name + " tool.", InputSchema: json.RawMessage(`{"type":"object"}`),
		SideEffect: class, Timeout: time.Minute})
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{spec}, Observer: evs.Observe}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// An allowed Gate.Call commits twice: the step's opening with its
// decision, the policy's and the tool start (a queued write), then its
// outcome. The counting store sees both, the first call (which begins the
// run) commits twice too, the observer signals step.started, and the note
// counts its tool.
func TestCountingStore_CountsEveryCommitOfAnAllowedCall(t *testing.T) {
	st := OpenCounting(t)
	var evs Events
	notes, err := NewNotes(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := testGate(t, st, &evs, "read_note", agentrt.ReadOnly)
	body := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		text, err := notes.Read()
		if err != nil {
			return nil, err
		}
		return json.Marshal(text)
	}
	ctx := context.Background()
	if _, err := g.Call(ctx, agentrt.Call{RunID: "r", CallID: "c0", Tool: "read_note", Body: body}); err != nil {
		t.Fatal(err)
	}
	if got := st.Commits(); got != 2 {
		t.Errorf("the call that began the run made %d commits, want 2", got)
	}
	before := st.Commits()
	res, err := g.Call(ctx, agentrt.Call{RunID: "r", CallID: "c1", Tool: "read_note", Args: json.RawMessage(`{"n":1}`), Body: body})
	if err != nil || string(res.Observation.Content) != `"first line\n"` {
		t.Fatalf("the call: %+v, %v", res, err)
	}
	if got := st.Commits() - before; got != 2 {
		t.Errorf("an allowed call made %d commits, want 2", got)
	}
	evs.Await(t, agentrt.EventStepStarted)
	if n := notes.Count("read_note"); n != 2 {
		t.Errorf("read_note ran %d times, want 2", n)
	}
}

// AwaitStatus started before the run exists reads it again after each
// event, and returns once a write's pending approval has paused it.
func TestEvents_AwaitStatusReturnsOnceTheRunReachesTheStatus(t *testing.T) {
	st := OpenCounting(t)
	var evs Events
	g := testGate(t, st, &evs, "send", agentrt.RemoteMutation)
	called := make(chan error, 1)
	go func() {
		_, err := g.Call(context.Background(), agentrt.Call{RunID: "r", CallID: "w", Tool: "send", NoWait: true,
			Body: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }})
		called <- err
	}()
	evs.AwaitStatus(t, st, "r", agentrt.RunWaiting)
	if p := Pending(t, st, "r"); p.Request.Spec.Name != "send" {
		t.Fatalf("the run waits on %+v", p)
	}
	if err := Recv(t, called, "the call's return"); err != nil {
		t.Fatal(err)
	}
}
