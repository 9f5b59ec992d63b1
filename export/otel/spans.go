package otel

import (
	"context"
	"errors"
	"time"

	"github.com/agentrt/agentrt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// startWindow is how far back, in seqs, eventStart looks.
const startWindow = 1000

// eventStart finds when e's step had an event of type typ (its start), read
// back from the store within startWindow seqs of e.
func (x *Exporter) eventStart(ctx context.Context, e agentrt.Event, typ agentrt.EventType) (time.Time, bool) {
	if x.store == nil {
		return e.At, false
	}
	evs, err := x.store.ListEventsAfter(ctx, e.RunID, max(0, e.Seq-startWindow), startWindow)
	if err != nil {
		return e.At, false
	}
	at, found := e.At, false
	for _, ev := range evs {
		if ev.Seq >= e.Seq {
			break
		}
		if ev.Type == typ && ev.StepID == e.StepID {
			at, found = ev.At, true
		}
	}
	return at, found
}

// reopenLastStep makes again the span of the step a run ended in, when an
// earlier process opened it: the last step.started before e, unless that
// step already failed. It ends at the step's last event.
func (x *Exporter) reopenLastStep(ctx context.Context, rs *runState, e agentrt.Event) error {
	if x.store == nil {
		return nil
	}
	evs, err := x.store.ListEventsAfter(ctx, e.RunID, max(0, e.Seq-startWindow), startWindow)
	if err != nil {
		return nil
	}
	var started *agentrt.Event
	var last time.Time
	for i := range evs {
		ev := &evs[i]
		if ev.Seq >= e.Seq {
			break
		}
		switch {
		case ev.Type == agentrt.EventStepStarted:
			started, last = ev, ev.At
		case started != nil && ev.StepID == started.StepID:
			last = ev.At
			if ev.Type == agentrt.EventStepFailed {
				started = nil
			}
		}
	}
	if started == nil {
		return nil
	}
	a := &attrs{max: x.maxText}
	a.str("step.id", started.StepID)
	if p, err := agentrt.PayloadAs[agentrt.StepStartedPayload](*started); err == nil {
		a.int("step.index", int64(p.Index))
	}
	st, err := x.startStep(ctx, rs, *started, started.At, a)
	if err != nil {
		return err
	}
	st.last = last
	rs.step = st
	return nil
}

// runSpan returns the run's state, opening its span at run.created (fresh)
// or, for a run whose creation an earlier process handled, at the run's
// creation time as the store has it.
func (x *Exporter) runSpan(ctx context.Context, e agentrt.Event, fresh bool, a *attrs) (*runState, error) {
	return x.runSpanIn(ctx, e, fresh, a, nil)
}

// runSpanIn is runSpan for a run begun under the caller's trace context
// tc (nil: none, or, for a run whose creation an earlier process handled,
// as the store's run.created says).
func (x *Exporter) runSpanIn(ctx context.Context, e agentrt.Event, fresh bool, a *attrs, tc *agentrt.TraceContext) (*runState, error) {
	if rs := x.runs[e.RunID]; rs != nil {
		if fresh {
			// A re-delivered run.created: the span is already open.
			rs.span.SetAttributes(a.kv[1:]...)
		}
		return rs, nil
	}
	start := e.At
	if a == nil {
		a = &attrs{max: x.maxText}
		a.str("run.id", e.RunID)
	}
	if !fresh {
		known := false
		if x.store != nil {
			if r, err := x.store.GetRunCapped(ctx, e.RunID); err == nil && !r.CreatedAt.IsZero() {
				start, known = r.CreatedAt, true
			}
		}
		a.bool("span.start_unknown", !known)
		tc = x.storedTrace(ctx, e.RunID)
	}
	tid, parent := runTrace(e.RunID, tc)
	ctx = withIDs(context.Background(), tid, SpanID(kindRun, e.RunID))
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	s := x.tracerStart(ctx, SpanRun, trace.SpanKindInternal, start, a.kv, !parent.IsValid())
	if err := checkIDs(s, tid, SpanID(kindRun, e.RunID)); err != nil {
		return nil, err
	}
	rs := &runState{reopened: !fresh, trace: tid, span: s, open: map[string]trace.Span{}, steps: map[string]*stepState{}}
	x.runs[e.RunID] = rs
	return rs, nil
}

// step returns the open span of e's step, making it again (start time from
// the store) when an earlier process opened it.
func (x *Exporter) step(ctx context.Context, rs *runState, e agentrt.Event) (*stepState, error) {
	if rs.step != nil && rs.step.id == e.StepID {
		return rs.step, nil
	}
	if st := rs.steps[e.StepID]; st != nil {
		return st, nil
	}
	// The step.started event's time, not the row's started_at, which an
	// approved call's execution moves.
	start, known := x.eventStart(ctx, e, agentrt.EventStepStarted)
	a := &attrs{max: x.maxText}
	a.str("step.id", e.StepID)
	if x.store != nil {
		for off := 0; ; off += 200 {
			steps, total, err := x.store.ListStepsPage(ctx, e.RunID, 200, off)
			if err != nil {
				break
			}
			found := false
			for _, s := range steps {
				if s.ID == e.StepID {
					found = true
					if !known && !s.StartedAt.IsZero() {
						start, known = s.StartedAt, true
					}
					a.int("step.index", int64(s.Index))
				}
			}
			if found || off+len(steps) >= total || len(steps) == 0 {
				break
			}
		}
	}
	a.bool("span.start_unknown", !known)
	st, err := x.startStep(ctx, rs, e, start, a)
	if err != nil {
		return nil, err
	}
	if rs.step == nil {
		rs.step = st
	} else {
		rs.steps[e.StepID] = st
	}
	return st, nil
}

func (x *Exporter) startStep(ctx context.Context, rs *runState, e agentrt.Event, at time.Time, a *attrs) (*stepState, error) {
	s, err := x.start(ctx, e.RunID, kindStep, e.StepID, SpanID(kindRun, e.RunID), SpanStep, trace.SpanKindInternal, at, a.kv)
	if err != nil {
		return nil, err
	}
	return &stepState{id: e.StepID, span: s, last: at}, nil
}

// endStep ends the step in progress at its last event.
// endOpenStep finds e's run span and ends the step open in it, first
// reopening the step an earlier process may have left open.
func (x *Exporter) endOpenStep(ctx context.Context, e agentrt.Event) (*runState, error) {
	rs, err := x.runSpan(ctx, e, false, nil)
	if err != nil {
		return nil, err
	}
	if rs.step == nil && rs.reopened {
		if err := x.reopenLastStep(ctx, rs, e); err != nil {
			return nil, err
		}
	}
	x.endStep(rs)
	return rs, nil
}

func (x *Exporter) endStep(rs *runState) {
	if rs.step != nil {
		x.endStepAt(rs, rs.step, rs.step.last)
	}
	for id, st := range rs.steps {
		st.span.End(trace.WithTimestamp(st.last))
		delete(rs.steps, id)
	}
}

func (x *Exporter) endStepAt(rs *runState, st *stepState, at time.Time) {
	st.span.End(trace.WithTimestamp(at))
	if rs.step == st {
		rs.step = nil
	}
	delete(rs.steps, st.id)
}

// start opens a child span of parent in the run's trace with the derived
// span id of (kind, id).
// child is a span under a step that one event opens and a later one
// closes: a tool's execution, an approval, a model call.
type child struct {
	kind, id, name string
	sk             trace.SpanKind
}

// openChild starts c under ev's step at at and keeps it open for the
// event that closes it.
func (x *Exporter) openChild(ev *event, c child, at time.Time, kv []attribute.KeyValue) error {
	s, err := x.start(ev.ctx, ev.e.RunID, c.kind, c.id, SpanID(kindStep, ev.e.StepID), c.name, c.sk, at, kv)
	if err != nil {
		return err
	}
	ev.rs.open[c.kind+"\x00"+c.id] = s
	return nil
}

// takeChild is c's open span, no longer kept open. When it opened before a
// restart (so no span is open), it starts it again: reopen sets the
// attributes it opened with and says when it started and whether that
// start is known, which the span records as span.start_unknown.
func (x *Exporter) takeChild(ev *event, c child, reopen func(b *attrs) (start time.Time, known bool)) (trace.Span, error) {
	key := c.kind + "\x00" + c.id
	if s := ev.rs.open[key]; s != nil {
		delete(ev.rs.open, key)
		return s, nil
	}
	b := &attrs{max: x.maxText}
	start, known := reopen(b)
	b.bool("span.start_unknown", !known)
	return x.start(ev.ctx, ev.e.RunID, c.kind, c.id, SpanID(kindStep, ev.e.StepID), c.name, c.sk, start, b.kv)
}

// spanName is base, followed by name when it may stand in a span name.
func spanName(base, name string) string {
	if safeName(name) {
		return base + " " + name
	}
	return base
}

func (x *Exporter) start(_ context.Context, runID, kind, id string, parent trace.SpanID, name string, sk trace.SpanKind, at time.Time, kv []attribute.KeyValue) (trace.Span, error) {
	tid, sid := TraceID(runID), SpanID(kind, id)
	if rs := x.runs[runID]; rs != nil {
		tid = rs.trace
	}
	psc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: parent, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), psc)
	ctx = withIDs(ctx, tid, sid)
	s := x.tracerStart(ctx, name, sk, at, kv, false)
	if err := checkIDs(s, tid, sid); err != nil {
		return nil, err
	}
	return s, nil
}

func (x *Exporter) tracerStart(ctx context.Context, name string, sk trace.SpanKind, at time.Time, kv []attribute.KeyValue, root bool) trace.Span {
	opts := []trace.SpanStartOption{trace.WithTimestamp(at), trace.WithSpanKind(sk), trace.WithAttributes(kv...)}
	if root {
		opts = append(opts, trace.WithNewRoot())
	}
	_, s := x.tracer.Start(ctx, name, opts...)
	return s
}

// ErrIDs is returned when the TracerProvider does not give the Exporter's
// spans their derived ids, so traces would not survive a restart.
var ErrIDs = errors.New("otel: the TracerProvider does not use otel.IDGenerator; build it with otel.NewTracerProvider or otel.Provider")

func checkIDs(s trace.Span, tid trace.TraceID, sid trace.SpanID) error {
	sc := s.SpanContext()
	if sc.TraceID() != tid || sc.SpanID() != sid {
		s.End()
		return ErrIDs
	}
	return nil
}
