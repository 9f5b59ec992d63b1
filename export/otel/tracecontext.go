package otel

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt"
)

// runTrace is the trace a run's spans are in and the remote span its run
// span is a child of: the caller's (its trace id and span id, its
// tracestate), when the run was begun under a trace context; else the
// trace derived from the run id, and no parent. The run's spans are
// recorded whatever the caller's sampled flag says: the export is of the
// whole record.
func runTrace(runID string, tc *agentrt.TraceContext) (trace.TraceID, trace.SpanContext) {
	if tc != nil {
		if tid, sid, _, ok := tc.IDs(); ok {
			ts, err := trace.ParseTraceState(tc.State)
			if err != nil {
				ts = trace.TraceState{}
			}
			return tid, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled,
				TraceState: ts, Remote: true})
		}
	}
	return TraceID(runID), trace.SpanContext{}
}

// storedTrace is the trace context the store's run.created of a run
// holds, for a run whose creation an earlier process exported.
func (x *Exporter) storedTrace(ctx context.Context, runID string) *agentrt.TraceContext {
	if x.store == nil {
		return nil
	}
	evs, _, err := x.store.ListEventsPage(ctx, runID, 1, 0)
	if err != nil || len(evs) == 0 || evs[0].Type != agentrt.EventRunCreated {
		return nil
	}
	p, err := agentrt.PayloadAs[agentrt.RunCreatedPayload](evs[0])
	if err != nil {
		return nil
	}
	return p.Trace
}
