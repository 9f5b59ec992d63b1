package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// FrameworkTool registers a framework's declaration by spec only: a nil
// or null schema is an empty object, a zero timeout the default, a schema
// that does not encode an error naming the tool; an empty class is left
// for NewGate to refuse, naming the tool.
func TestFrameworkTool_FillsTheDefaultsAndLeavesAMissingClassToNewGate(t *testing.T) {
	var none *struct{}
	for _, schema := range []any{nil, none} {
		tl, err := agentrt.FrameworkTool("read", "reads", schema, agentrt.ReadOnly, 0)
		if err != nil || string(tl.Spec().InputSchema) != `{"type":"object"}` || tl.Spec().Timeout != agentrt.DefaultFrameworkToolTimeout {
			t.Fatalf("schema %#v: %+v, %v", schema, tl, err)
		}
	}
	if _, err := agentrt.FrameworkTool("bad", "", map[string]any{"x": func() {}}, agentrt.ReadOnly, 0); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("a schema that does not encode: %v", err)
	}
	tl, err := agentrt.FrameworkTool("send", "sends", map[string]any{"type": "object"}, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: openStore(t), Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tl}}})
	if err == nil || !strings.Contains(err.Error(), `"send"`) {
		t.Fatalf("NewGate with an unclassified tool: %v", err)
	}
}

// Gate.Reply answers a hook: a tool the gate has no spec for is a
// refusal and writes nothing; a read runs and its result comes back; a
// body's own error comes back as that very error, once recorded; a
// pending write (Interrupt) comes back as its approval; rejected, asked
// again, it is a refusal naming its kind; a run that ended is ErrRunEnded.
func TestGate_ReplyAnswersAFrameworksHookInItsThreeWays(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	read, _ := agentrt.FrameworkTool("read", "reads", nil, agentrt.ReadOnly, 0)
	send, _ := agentrt.FrameworkTool("send", "sends", nil, agentrt.RemoteMutation, 0)
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{read, send}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	var n atomic.Int64
	ok := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		n.Add(1)
		return json.RawMessage(`"text"`), nil
	}
	own := errors.New("the framework's own interrupt")
	failing := func(context.Context, json.RawMessage) (json.RawMessage, error) { n.Add(1); return nil, own }
	opts := agentrt.AdapterOptions{Interrupt: true}

	if rep, err := g.Reply(ctx, opts.Call("run-1", "c0", "wipe", nil, ok)); err != nil || !strings.Contains(rep.Refusal, `"wipe"`) || len(kit.MustSteps(t, st, "run-1")) != 0 {
		t.Fatalf("an unknown tool: %+v, %v", rep, err)
	}
	if rep, err := g.Reply(ctx, opts.Call("run-1", "c1", "read", nil, ok)); err != nil || string(rep.Result) != `"text"` || rep.Refusal != "" {
		t.Fatalf("a read: %+v, %v", rep, err)
	}
	if _, err := g.Reply(ctx, opts.Call("run-1", "c2", "read", json.RawMessage(`{"n":2}`), failing)); err != own {
		t.Fatalf("a body's own error: %v, want it as it was", err)
	}
	rep, err := g.Reply(ctx, opts.Call("run-1", "c3", "send", nil, ok))
	if err != nil || rep.Pending == nil {
		t.Fatalf("a write: %+v, %v", rep, err)
	}
	if err := (agentrt.Operator{Store: st}).RejectShown(ctx, "run-1", rep.Pending.ID, rep.Pending.Hash, "op", "no"); err != nil {
		t.Fatal(err)
	}
	rep, err = g.Reply(ctx, opts.Call("run-1", "c3", "send", nil, ok))
	var body map[string]string
	if err != nil || rep.Refusal == "" || json.Unmarshal(rep.ErrorJSON(), &body) != nil || body["error"] != rep.Refusal || n.Load() != 2 {
		t.Fatalf("the rejected write asked again: %+v, %v; bodies ran %d times", rep, err, n.Load())
	}
	if _, err := g.Reply(ctx, opts.Call("run-2", "c1", "read", nil, ok)); err != nil {
		t.Fatal(err)
	}
	if err := g.Complete(ctx, "run-2", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reply(ctx, opts.Call("run-2", "c2", "read", nil, ok)); !errors.Is(err, agentrt.ErrRunEnded) {
		t.Fatalf("a call after the end: %v, want ErrRunEnded", err)
	}
}
