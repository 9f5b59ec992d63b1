package agentrt

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// noStore is a Store the constructors hold but never call.
type noStore struct{ Store }

// probeModel is a Model the constructors hold but never call.
type probeModel struct{}

func (probeModel) Name() string { return "probe" }
func (probeModel) Generate(context.Context, ModelRequest) (ModelResponse, error) {
	return ModelResponse{}, nil
}

// TestConfig_EveryEngineFieldReachesDriverGateAndWorker sets every field of
// EngineConfig to a value of its own and checks that the engine each of
// NewDriver, NewGate and NewWorker builds holds all of them. The table of
// probes is keyed by field name and checked against EngineConfig by
// reflection, so a field added to EngineConfig without a probe fails here,
// and a constructor that copies fields one by one and drops one fails too.
func TestConfig_EveryEngineFieldReachesDriverGateAndWorker(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	observer := Observer(func(Event) {})
	reconcile := func(context.Context, RunView) (Reconciliation, error) { return Reconciliation{}, nil }
	pins := &PinnedKeys{keys: map[string][]byte{"c": nil}}
	policy := SideEffectPolicy{ReadOnly: Allow}
	disclosure := DisclosureFunc(func(context.Context, DisclosureInput) (DisclosureOutcome, error) { return DisclosureOutcome{}, nil })
	await := func(context.Context, Event) error { return nil }
	egress := &EgressRules{Hosts: []string{"probe.example"}, MaxRequestBytes: 7}
	tool := ToolFunc{ToolSpec: ToolSpec{Name: "probe", SideEffect: ReadOnly, Timeout: time.Second, InputSchema: []byte(`{"type":"object"}`)},
		Fn: func(context.Context, ToolCall) (ToolResult, error) { return ToolResult{}, nil }}
	cfg := EngineConfig{
		Store: noStore{}, Policy: policy, Tools: []Tool{tool}, Observer: observer,
		Model:     &ModelConfig{Model: probeModel{}},
		Reconcile: reconcile, Now: func() time.Time { return at }, NewID: func() string { return "probe-id" },
		LeaseTTL: 7 * time.Second, LeaseOwner: "probe-owner", PinnedKeys: pins, RequireSignedGrant: true,
		Egress: egress, Prices: PriceTable{"probe": {InputPerMTok: 7}}, Disclosure: disclosure,
		AwaitCheckpoint: await,
	}
	fnPtr := func(v any) uintptr { return reflect.ValueOf(v).Pointer() }
	probes := map[string]func(e *engine) bool{
		"Store":     func(e *engine) bool { return e.store == cfg.Store },
		"Policy":    func(e *engine) bool { _, ok := e.policy.(SideEffectPolicy); return ok },
		"Tools":     func(e *engine) bool { return e.tools["probe"] != nil && len(e.tools) == 1 },
		"Observer":  func(e *engine) bool { return e.observer != nil && fnPtr(e.observer) == fnPtr(observer) },
		"Model":     func(e *engine) bool { return e.model == cfg.Model },
		"Reconcile": func(e *engine) bool { return e.reconcile != nil && fnPtr(e.reconcile) == fnPtr(reconcile) },
		"Now":       func(e *engine) bool { return e.now().Equal(at) },
		"NewID":     func(e *engine) bool { return e.newID() == "probe-id" },
		"LeaseTTL":  func(e *engine) bool { return e.leaseTTL == 7*time.Second },
		"LeaseOwner": func(e *engine) bool {
			return len(e.owner) > len("probe-owner/") && e.owner[:len("probe-owner/")] == "probe-owner/"
		},
		"PinnedKeys":         func(e *engine) bool { return e.pinned == pins },
		"RequireSignedGrant": func(e *engine) bool { return e.requireSigned },
		"Egress":             func(e *engine) bool { return e.egress == egress },
		"Disclosure":         func(e *engine) bool { return e.disclosure != nil && fnPtr(e.disclosure) == fnPtr(disclosure) },
		"AwaitCheckpoint":    func(e *engine) bool { return e.awaitCheckpoint != nil && fnPtr(e.awaitCheckpoint) == fnPtr(await) },
		"Prices": func(e *engine) bool {
			return e.prices != nil && e.prices.Table["probe"].InputPerMTok == 7 && len(e.prices.ID) == len("sha256:")+64
		},
	}
	typ := reflect.TypeOf(EngineConfig{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, ok := probes[f.Name]; !ok {
			t.Errorf("EngineConfig.%s has no probe: add one to this test", f.Name)
		}
		if reflect.ValueOf(cfg).Field(i).IsZero() {
			t.Errorf("EngineConfig.%s is zero in the probe config: give it a value of its own", f.Name)
		}
	}
	if len(probes) != typ.NumField() {
		t.Errorf("%d probes for %d EngineConfig fields", len(probes), typ.NumField())
	}
	agent := AgentFunc(func(context.Context, StepInput) (Decision, error) { return Decision{}, nil })
	engines := map[string]func() (*engine, error){
		"Driver": func() (*engine, error) {
			d, err := NewDriver(Config{EngineConfig: cfg, Agent: agent})
			if err != nil {
				return nil, err
			}
			return d.e, nil
		},
		"Gate": func() (*engine, error) {
			g, err := NewGate(GateConfig{EngineConfig: cfg})
			if err != nil {
				return nil, err
			}
			return g.e, nil
		},
		"Worker": func() (*engine, error) {
			w, err := NewWorker(WorkerConfig{EngineConfig: cfg, Agent: agent})
			if err != nil {
				return nil, err
			}
			return w.d.e, nil
		},
	}
	for name, build := range engines {
		e, err := build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for field, holds := range probes {
			if !holds(e) {
				t.Errorf("%s dropped EngineConfig.%s", name, field)
			}
		}
	}
}
