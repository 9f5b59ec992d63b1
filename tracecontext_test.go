package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
)

const goodParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A traceparent is read as W3C Trace Context says: a malformed one is
// refused, naming the field; a malformed or oversized tracestate is
// dropped and the traceparent kept; the ids and the sampled flag read
// back.
func TestTraceContext_ParsesAsW3CSays(t *testing.T) {
	for _, bad := range []string{"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"} {
		var ce *agentrt.ConfigError
		if _, err := agentrt.ParseTraceContext(bad, ""); !errors.As(err, &ce) || ce.Field != "traceparent" {
			t.Errorf("ParseTraceContext(%q) = %v, want a ConfigError naming traceparent", bad, err)
		}
	}
	long := "a=1"
	for range 40 {
		long += ",b=2"
	}
	for state, want := range map[string]string{"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		"novalue": "", "a=\x01": "", long: ""} {
		tc, err := agentrt.ParseTraceContext(goodParent, state)
		if err != nil || tc.Parent != goodParent || tc.State != want {
			t.Errorf("ParseTraceContext(good, %q) = %+v, %v; want state %q", state, tc, err, want)
		}
	}
	tc, _ := agentrt.ParseTraceContext("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later", "")
	trace, span, sampled, ok := tc.IDs()
	if !ok || sampled || trace[0] != 0x4b || span[7] != 0xb7 {
		t.Errorf("a later version's ids: %x %x sampled %v ok %v", trace, span, sampled, ok)
	}
}

// A run begun through a gate with a trace context records it on
// run.created; one begun with a malformed traceparent is refused before
// anything is written.
func TestGate_BeginRecordsTheCallersTraceContext(t *testing.T) {
	st := openStore(t)
	tool := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "read", SideEffect: agentrt.ReadOnly, Timeout: time.Second,
		InputSchema: json.RawMessage(`{"type":"object"}`)}}
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{tool}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := agentrt.TraceContext{Parent: goodParent, State: "rojo=00f067aa0ba902b7"}
	gs, err := g.Begin(agentrt.WithTraceContext(ctx, want), "traced", "call read", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	gs.Close()
	evs, err := st.ListEvents(ctx, "traced")
	if err != nil || len(evs) == 0 {
		t.Fatalf("events %v, %v", evs, err)
	}
	p, err := agentrt.PayloadAs[agentrt.RunCreatedPayload](evs[0])
	if err != nil || p.Trace == nil || *p.Trace != want {
		t.Fatalf("run.created trace = %+v, %v; want %+v", p.Trace, err, want)
	}
	bad := agentrt.WithTraceContext(ctx, agentrt.TraceContext{Parent: "00-zz"})
	if _, err := g.Begin(bad, "untraced", "call read", agentrt.DefaultLimits()); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("a malformed traceparent began a run: %v", err)
	}
	if _, err := st.GetRun(ctx, "untraced"); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("the refused run was written: %v", err)
	}
}
