package otel_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	agentotel "github.com/agentrt/agentrt/export/otel"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// A run begun under a caller's W3C trace context (an MCP host's _meta
// traceparent) is exported into the caller's trace: the run span is the
// child of the caller's span, and its steps and tool in the same trace.
// An exporter restarted after run.created (the run's span made again)
// reads the trace context from the store and exports the same spans.
func TestExporter_RunBegunUnderACallersTraceIsItsChild(t *testing.T) {
	const hostTrace, hostSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	w := newWorld(t)
	ctx := agentrt.WithTraceContext(context.Background(),
		agentrt.TraceContext{Parent: "00-" + hostTrace + "-" + hostSpan + "-00", State: "rojo=00f067aa0ba902b7"})
	run, err := w.driver(t, &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read", `{"path":"notes.txt"}`, "look first"),
		scripted.Complete(`{}`),
	}}, nil).Start(ctx, "traced", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t)
	tp := rcv.provider(t)
	exportAll(t, w, exporter(t, w, agentotel.Config{TracerProvider: tp}), nil)
	flush(t, tp)
	spans := rcv.got()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want run, 2 steps, 1 tool: %+v", len(spans), spans)
	}
	r := one(t, spans, agentotel.SpanRun)
	if r.TraceID != hostTrace || r.Parent != hostSpan || r.SpanID != hexSpan("run", run.ID) {
		t.Fatalf("run span %s/%s<-%s, want in trace %s under %s (the host's sampled flag 00 drops nothing)", r.TraceID, r.SpanID, r.Parent, hostTrace, hostSpan)
	}
	for _, s := range spans {
		if s.TraceID != hostTrace {
			t.Fatalf("span %s in trace %s, not the host's", s.Name, s.TraceID)
		}
	}

	// Restarted after run.created: a new exporter makes the run's span
	// again from the store.
	rcv2 := newReceiver(t)
	tp2 := rcv2.provider(t)
	ro, err := sqlite.OpenExisting(w.path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	cur := &export.MemCursor{}
	exportRestarting(t, w, tp2, export.Follower{Store: ro, Cursor: cur, Once: true}, 1, 1<<40)
	flush(t, tp2)
	for _, s := range rcv2.got() {
		if s.TraceID != hostTrace || (s.Name == agentotel.SpanRun && s.Parent != hostSpan) {
			t.Fatalf("after a restart, span %s %s<-%s left the host's trace", s.Name, s.TraceID, s.Parent)
		}
	}
}
