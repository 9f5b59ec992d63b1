package enginetest

import (
	"context"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// An allowed Gate.Call commits twice: the run's creation (for the call
// that begins the run), the step's opening, its decision, the policy's and
// the tool start in one transaction, then the outcome. Nothing is lost by
// the folding: each step holds its five events and the chain verifies. A
// write the policy sends to an operator is recorded as ever (its pending
// approval, the run waiting, its body not run) and, approved, runs once.
func caseGate_AllowedCallCommitsTwice(t *testing.T, bk *Backend) {
	ctx := context.Background()
	inner, _ := lkOpen(t, bk)
	st := kit.Counting(t, inner)
	tools := []agentrt.Tool{agentrt.SpecOnly(bwSpec("read", agentrt.ReadOnly)), agentrt.SpecOnly(bwSpec("send", agentrt.RemoteMutation))}
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: tools}}, nil)
	t.Cleanup(g.Close)
	read, send := &bcBody{}, &bcBody{}
	for i, args := range []string{`{"n":1}`, `{"n":2}`} {
		before := st.Commits()
		res, err := g.Call(ctx, bcCall("run-1", "r"+args, "read", args, read))
		if err != nil || res.Observation.Kind != agentrt.ObsToolResult {
			t.Fatalf("read %d: %+v, %v", i, res, err)
		}
		if got := st.Commits() - before; got != 2 {
			t.Fatalf("allowed call %d made %d commits, want 2", i, got)
		}
	}
	step := []kit.E{agentrt.EventStepStarted, agentrt.EventStepDecided, agentrt.EventStepPolicy, agentrt.EventToolStarted, agentrt.EventToolFinished}
	kit.RequireEvents(t, st, "run-1", []kit.E{agentrt.EventRunCreated, agentrt.EventRunStarted}, step, step)

	res, err := g.Call(ctx, agentrt.Call{RunID: "run-1", CallID: "w", Tool: "send", Args: []byte(`{"text":"x"}`), Body: send.body, NoWait: true})
	if err != nil || res.Pending == nil || send.n.Load() != 0 {
		t.Fatalf("the write: %+v, %v; body ran %d times", res, err, send.n.Load())
	}
	if run := kit.MustRun(t, st, "run-1"); run.Status != agentrt.RunWaiting {
		t.Fatalf("the run is %s while the write waits, want waiting", run.Status)
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", res.Pending.ID, res.Pending.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	res, err = g.Call(ctx, agentrt.Call{RunID: "run-1", CallID: "w", Tool: "send", Args: []byte(`{"text":"x"}`), Body: send.body})
	if err != nil || res.Observation.Kind != agentrt.ObsToolResult || send.n.Load() != 1 || read.n.Load() != 2 {
		t.Fatalf("the approved write: %+v, %v; send ran %d, read %d", res, err, send.n.Load(), read.n.Load())
	}
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
