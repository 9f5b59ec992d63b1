package agentrt_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	kit "github.com/agentrt/agentrt/internal/enginekit"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// everyEvent drives the runtime down the paths that write each event type:
// a tool call allowed, one denied, one approved and resumed, one rejected,
// a cancel, limits and a loop, model calls that succeed and fail, a worker
// claiming an enqueued run and taking over a lapsed lease with a step in
// flight, an approver invited, enrolled and removed, and (erase) the first
// run erased. It returns every event the chain holds.
func everyEvent(t *testing.T, erase bool) (*sqlite.Store, []agentrt.Event) {
	t.Helper()
	ctx := context.Background()
	e := newEnv(t)
	st := e.store
	echo := kit.NewTool("echo", agentrt.ReadOnly, `{"type":"object"}`, nil)
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)

	// Allowed, then completed.
	d := e.Driver(kit.Script(kit.Call("echo", `{"x":"<a&b>"}`), kit.Complete(`{"done":true}`)), agentrt.DefaultPolicy(), echo)
	if _, err := d.StartWithID(ctx, "allow", "say <hi>", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	// Denied, then the step limit.
	d = e.Driver(kit.Script(kit.Call("echo", `{}`), kit.Call("echo", `{"y":1}`)), kit.Fixed(agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "no"}), echo)
	if _, err := d.StartWithID(ctx, "deny", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxSteps = 1 })); err != nil {
		t.Fatal(err)
	}
	// A loop.
	d = e.Driver(kit.Script(kit.Call("echo", `{}`), kit.Call("echo", `{}`), kit.Call("echo", `{}`)), agentrt.DefaultPolicy(), echo)
	if _, err := d.StartWithID(ctx, "loop", "g", kit.Limits(func(l *agentrt.Limits) { l.LoopThreshold = 2 })); err != nil {
		t.Fatal(err)
	}
	// Approved and resumed; rejected; cancelled while waiting.
	for _, id := range []string{"approve", "reject", "cancel"} {
		d = e.Driver(kit.Script(kit.Call("send", `{"path":"/r"}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), send)
		if _, err := d.StartWithID(ctx, id, "g", agentrt.DefaultLimits()); err != nil {
			t.Fatal(err)
		}
		a := kit.PendingApproval(t, st, id)
		var err error
		switch id {
		case "approve":
			if err = agentrt.ApproveShown(ctx, st, nil, id, a.ID, a.Hash, "alice", "ok"); err == nil {
				_, err = d.Resume(ctx, id)
			}
		case "reject":
			err = agentrt.RejectShown(ctx, st, nil, id, a.ID, a.Hash, "bob", "not that")
		case "cancel":
			_, err = e.Operator().Cancel(ctx, id, "op", "stop")
		}
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// Model calls: one completes, one fails for good.
	n := 0
	m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		n++
		if n > 1 {
			return agentrt.ModelResponse{}, errors.New("the provider refuses")
		}
		return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}}
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if _, err := in.Model.Generate(ctx, mcReq(20)); err != nil {
			return agentrt.Decision{}, err
		}
		return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "echo", Args: json.RawMessage(`{}`)}, nil
	})
	mcfg := agentrt.ModelConfig{Model: m}
	cfg := e.Config(agent, agentrt.DefaultPolicy(), echo)
	cfg.Model = &mcfg
	if _, err := e.DriverFor(cfg).StartWithID(ctx, "model", "g", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	// Budgets: one added and set; a priced call reserves against it (the
	// first price version is stored), one whose model panics leaves its
	// reservation uncertain, which an operator reconciles; a request the
	// egress rules refuse is recorded and never sent.
	op := e.Operator()
	if _, err := op.AddBudget(ctx, agentrt.NewBudget{Name: "acme", Scope: "tenant=acme", Window: agentrt.WindowDay, MaxCost: 1_000_000_000, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.SetBudget(ctx, "acme", 2_000_000_000, 0, "alice"); err != nil {
		t.Fatal(err)
	}
	acme := kit.Limits(func(l *agentrt.Limits) { l.Labels = "tenant=acme" })
	prices := agentrt.PriceTable{"m": {InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}}
	budgeted := func(id string, gen func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error), rules *agentrt.EgressRules) {
		t.Helper()
		cfg := e.Config(agent, agentrt.DefaultPolicy(), echo)
		cfg.Model = &agentrt.ModelConfig{Model: &mcModel{name: "m", GenerateFunc: gen}}
		cfg.Prices = prices
		cfg.Egress = rules
		if _, err := e.DriverFor(cfg).StartWithID(ctx, id, "g", acme); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	budgeted("budgeted", func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}, nil)
	budgeted("uncertain", func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		panic("the adapter broke mid-request")
	}, nil)
	calls, err := st.ListModelCalls(ctx, "uncertain")
	if err != nil || len(calls) != 1 {
		t.Fatalf("uncertain: model calls %+v, %v", calls, err)
	}
	if _, err := op.ReconcileReservation(ctx, calls[0].ID, agentrt.Amount{Cost: 40, Tokens: 20}, "bob", "provider usage export"); err != nil {
		t.Fatal(err)
	}
	budgeted("egress", func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		t.Error("a request the egress rules refuse reached the model")
		return agentrt.ModelResponse{}, errors.New("sent")
	}, &agentrt.EgressRules{Models: []string{"another"}})
	// A worker claims an enqueued run, and takes over a lapsed lease on a
	// run whose read-only step was in flight.
	past := e.Clock.Now().Add(-time.Hour)
	_, err = st.Update(ctx, func(tx agentrt.Tx) error {
		if err := tx.RunInsert(agentrt.Run{ID: "lapsed", Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(),
			CreatedAt: past, StartedAt: past, LeaseOwner: "dead", LeaseExpiresAt: past, Generation: 1, StepCount: 1}); err != nil {
			return err
		}
		if err := tx.StepInsert(agentrt.Step{ID: "lapsed-0", RunID: "lapsed", Index: 0, Status: agentrt.StepDeciding, StartedAt: past}); err != nil {
			return err
		}
		dec := scripted.ToolCall("echo", `{}`, "again")
		return tx.StepUpdate(agentrt.StepUpdate{ID: "lapsed-0", From: []agentrt.StepStatus{agentrt.StepDeciding}, Status: agentrt.StepExecuting, Decision: &dec})
	})
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{}, 2)
	observe := func(ev agentrt.Event) {
		if ev.Type == agentrt.EventRunFinished {
			finished <- struct{}{}
		}
	}
	w, err := agentrt.NewWorker(agentrt.WorkerConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{echo},
		Observer: observe, Now: e.Clock.Now, NewID: kit.SeqIDs("w")}, Agent: kit.Script(kit.Complete(`{}`)), Poll: 5 * time.Millisecond, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	if _, err := w.Driver().EnqueueWithID(ctx, "queued", "g", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-finished:
		case <-time.After(time.Minute):
			t.Fatalf("only %d of 2 runs finished", i)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("worker Run = %v", err)
	}
	// An approver invited, enrolled and removed.
	if _, _, err := op.InviteApprover(ctx, "carol", "admin"); err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	der, _ := x509.MarshalPKIXPublicKey(key.Public())
	if _, err := op.EnrollApprover(ctx, agentrt.NewApprover{ID: "dave-id", Name: "dave", Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "admin"}); err != nil {
		t.Fatal(err)
	}
	// Given a role, dave votes on a payment that needs two of finance,
	// which stays pending, before he is removed.
	if _, err := op.SetApproverAccess(ctx, "dave", agentrt.ApproverAccess{Roles: []string{"finance"}}, "admin"); err != nil {
		t.Fatal(err)
	}
	two := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Reason: "two of finance", Kind: "payment",
		Requirement: &agentrt.Requirement{Stages: []agentrt.Stage{{Quantifier: agentrt.QuantMofN, M: 2, Roles: []string{"finance"}}}}}
	d = e.Driver(kit.Script(kit.Call("send", `{"path":"/pay"}`), kit.Complete(`{}`)), kit.Fixed(two), send)
	if _, err := d.StartWithID(ctx, "vote", "g", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	if a := kit.PendingApproval(t, st, "vote"); agentrt.ApproveShown(ctx, st, nil, "vote", a.ID, a.Hash, "dave", "mine") != nil {
		t.Fatal("dave's vote was refused")
	}
	if _, err := op.RemoveApprover(ctx, "dave", "admin"); err != nil {
		t.Fatal(err)
	}
	// A result the disclosure rules redacted.
	dcfg := e.Config(kit.Script(kit.Call("read", `{}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), plantedTool("read", false))
	dcfg.Disclosure = redactPlanted
	if _, err := e.DriverFor(dcfg).StartWithID(ctx, "disclosed", "g", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	// A gate's two calls at once: one waits for approval while its sibling
	// runs, and the run waits when the sibling is done (run.waiting).
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{echo, send}, Now: e.Clock.Now, NewID: kit.SeqIDs("g")}})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := g.Begin(ctx, "siblings", "g", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	read, _ := gs.Step(ctx)
	write, _ := gs.Step(ctx)
	if v, err := write.Propose(ctx, kit.Call("send", `{"path":"/r"}`)); err != nil || v.Outcome != agentrt.VerdictPending {
		t.Fatalf("siblings: the write's verdict %s, %v", v.Outcome, err)
	}
	if v, err := read.Propose(ctx, kit.Call("echo", `{}`)); err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("siblings: the read's verdict %s, %v", v.Outcome, err)
	}
	if _, err := read.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if !gs.Done() {
		t.Fatal("siblings: the session goes on after the run waits")
	}
	if erase {
		if _, err := op.Erase(ctx, "allow", "dpo", "request 42"); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := st.ListEventsAfter(ctx, "", 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return st, evs
}

// Every event type the runtime writes, on every path that writes it,
// decodes to its catalogue type (never a map, never an error), each type
// in the catalogue is written by some path, and encoding the decoded value
// gives back the bytes stored: the catalogue is the format, not a reading
// of it.
func TestEvents_CatalogueCoversEveryTypeTheRuntimeWrites(t *testing.T) {
	_, evs := everyEvent(t, true)
	seen := map[agentrt.EventType]int{}
	for _, ev := range evs {
		v, err := agentrt.DecodePayload(ev)
		if err != nil {
			t.Errorf("event %d (%s) %s: %v", ev.Seq, ev.Type, ev.Payload, err)
			continue
		}
		seen[ev.Type]++
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Struct {
			t.Errorf("event %d (%s) decodes to a %T, not a struct", ev.Seq, ev.Type, v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("event %d (%s): re-encoding: %v", ev.Seq, ev.Type, err)
		}
		if !bytes.Equal(b, ev.Payload) && !(ev.Type == agentrt.EventStepFailed && sameSorted(b, ev.Payload)) {
			t.Errorf("event %d (%s): the catalogue type encodes\n%s\nbut the runtime wrote\n%s", ev.Seq, ev.Type, b, ev.Payload)
		}
	}
	for _, k := range agentrt.EventCatalogue() {
		if seen[k.Type] == 0 {
			t.Errorf("no path wrote %s", k.Type)
		}
	}
	if len(seen) != len(agentrt.EventCatalogue()) {
		t.Errorf("%d event types written, the catalogue holds %d", len(seen), len(agentrt.EventCatalogue()))
	}
}

// sameSorted reports whether b with its keys sorted is want: the
// operator's step.failed is written with sorted keys.
func sameSorted(b, want []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	s, _ := json.Marshal(m)
	return bytes.Equal(s, want)
}

// A type the catalogue does not hold, and a payload that is not its type's,
// are errors a reader can branch on, and PayloadAs refuses the wrong type.
func TestEvents_DecodeRefusesUnknownTypesAndMisshapenPayloads(t *testing.T) {
	_, err := agentrt.DecodePayload(agentrt.Event{Seq: 7, Type: "bench.floor", Payload: json.RawMessage(`{}`)})
	var pe *agentrt.EventPayloadError
	if !errors.Is(err, agentrt.ErrUnknownEvent) || !errors.As(err, &pe) || pe.Seq != 7 {
		t.Fatalf("unknown type: %v", err)
	}
	_, err = agentrt.DecodePayload(agentrt.Event{Seq: 8, Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{"index":"one"}`)})
	if err == nil || errors.Is(err, agentrt.ErrUnknownEvent) {
		t.Fatalf("misshapen payload: %v", err)
	}
	ev := agentrt.Event{Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{"index":3}`)}
	if p, err := agentrt.PayloadAs[agentrt.StepStartedPayload](ev); err != nil || p.Index != 3 {
		t.Fatalf("PayloadAs = %+v, %v", p, err)
	}
	if _, err := agentrt.PayloadAs[agentrt.RunFinishedPayload](ev); err == nil {
		t.Fatal("PayloadAs accepted the wrong type")
	}
}
