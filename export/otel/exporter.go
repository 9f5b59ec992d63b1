package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every span the Exporter makes.
const Scope = "github.com/agentrt/agentrt/export/otel"

// SemConvVersion is the version of the OpenTelemetry semantic conventions
// whose gen_ai.* attributes the model and tool spans carry.
const SemConvVersion = "1.41.0"

// Span names. Model and tool spans follow the GenAI conventions and add the
// model or tool name when it is a plain identifier.
const (
	SpanRun      = "agentrt.run"
	SpanStep     = "agentrt.step"
	SpanModel    = "chat"
	SpanTool     = "execute_tool"
	SpanApproval = "agentrt.approval"
	SpanLateTool = "agentrt.tool.late"
	SpanEvent    = "agentrt.event"
)

// Config configures an Exporter.
type Config struct {
	// TracerProvider makes the spans. It must give the Exporter's spans
	// their derived ids: build it with NewTracerProvider or Provider, or
	// add sdktrace.WithIDGenerator(IDGenerator{}). Required.
	TracerProvider trace.TracerProvider
	// Store, when set, supplies the start time of a span whose first event
	// was handled by an earlier process (a restart). Without it such a span
	// starts at the event that reopened it, marked span.start_unknown.
	Store agentrt.StoreReader
	// MaxText bounds every text attribute, in bytes. Zero is
	// DefaultMaxText; at least 64.
	MaxText int
}

// Exporter maps events to spans. Spans stay open in memory from their first
// event to their last; a span still open when the process stops is made
// again, with the same ids, by the next event that needs it.
type Exporter struct {
	tracer  trace.Tracer
	store   agentrt.StoreReader
	maxText int

	mu   sync.Mutex
	runs map[string]*runState
}

// runState is what is open of one run.
type runState struct {
	// reopened: the run's span was made again here, its start handled by
	// an earlier process, so its open step may be unknown.
	reopened bool
	// trace is the trace the run's spans are in (runTrace).
	trace trace.TraceID
	span  trace.Span
	step  *stepState // the step in progress
	open  map[string]trace.Span
	steps map[string]*stepState
}

type stepState struct {
	id   string
	span trace.Span
	last time.Time
}

// NewExporter validates cfg and returns an Exporter.
func NewExporter(cfg Config) (*Exporter, error) {
	if cfg.TracerProvider == nil {
		return nil, errors.New("otel: Config.TracerProvider is required")
	}
	if cfg.MaxText == 0 {
		cfg.MaxText = DefaultMaxText
	}
	if cfg.MaxText < 64 {
		return nil, fmt.Errorf("otel: Config.MaxText must be at least 64, got %d", cfg.MaxText)
	}
	return &Exporter{
		tracer:  cfg.TracerProvider.Tracer(Scope, trace.WithSchemaURL(semconv.SchemaURL)),
		store:   cfg.Store,
		maxText: cfg.MaxText,
		runs:    map[string]*runState{},
	}, nil
}

// Sink returns the Exporter as an export.Sink.
func (x *Exporter) Sink(ctx context.Context) export.Sink {
	return func(e agentrt.Event) error { return x.Handle(ctx, e) }
}

// event is one event being mapped: its decoded payload (a catalogue type,
// or nil when it would not decode), its attributes so far, and once found
// the run and step it belongs to.
type event struct {
	ctx context.Context
	e   agentrt.Event
	p   any
	a   *attrs
	rs  *runState
	st  *stepState
}

// handler maps one event type.
type handler func(x *Exporter, ev *event) error

// on adapts a function of one payload type to a handler; a payload that
// would not decode reaches it as its zero value.
func on[T any](f func(x *Exporter, ev *event, p T) error) handler {
	return func(x *Exporter, ev *event) error {
		p, _ := ev.p.(T)
		return f(x, ev, p)
	}
}

// runHandlers map the events that open or close the run's and steps' spans;
// stepHandlers the events of a step, once its span is found; describers the
// attributes of events that become span events.
var runHandlers, stepHandlers map[agentrt.EventType]handler

var describers = map[agentrt.EventType]func(p any, a *attrs){
	agentrt.EventRunStarted: func(any, *attrs) {},
	agentrt.EventRunResumed: func(v any, a *attrs) {
		p, _ := v.(agentrt.RunResumedPayload)
		a.str("resumed.after", p.After)
	},
	agentrt.EventLeaseTakenOver: func(v any, a *attrs) {
		p, _ := v.(agentrt.LeaseTakenOverPayload)
		a.str("lease.previous_owner", p.PreviousOwner)
		if !p.PreviousExpiresAt.IsZero() {
			a.str("lease.previous_expires_at", p.PreviousExpiresAt.Format(time.RFC3339Nano))
		}
		a.str("lease.owner", p.Owner)
	},
	agentrt.EventLimitExceeded: func(v any, a *attrs) {
		p, _ := v.(agentrt.LimitExceededPayload)
		a.str("limit.reason", string(p.Reason))
		a.str("limit.detail", p.Detail)
	},
	agentrt.EventLoopDetected: func(v any, a *attrs) {
		p, _ := v.(agentrt.LoopDetectedPayload)
		a.int("loop.repeats", int64(p.Repeats))
		a.str("loop.tool", p.Tool)
		a.str("loop.args_hash", p.ArgsHash)
		a.str("loop.observation_hash", p.ObservationHash)
	},
}

func init() {
	runHandlers = map[agentrt.EventType]handler{
		agentrt.EventRunCreated:  on((*Exporter).runCreated),
		agentrt.EventRunFinished: on((*Exporter).runFinished),
		agentrt.EventStepStarted: on((*Exporter).stepStarted),
	}
	stepHandlers = map[agentrt.EventType]handler{
		agentrt.EventStepDecided:     on((*Exporter).stepDecided),
		agentrt.EventStepPolicy:      on((*Exporter).stepPolicy),
		agentrt.EventToolStarted:     on((*Exporter).toolStarted),
		agentrt.EventToolFinished:    on((*Exporter).toolFinished),
		agentrt.EventStepFailed:      on((*Exporter).stepFailed),
		agentrt.EventStepInterrupted: on((*Exporter).stepInterrupted),
		agentrt.EventApprovalRequest: on((*Exporter).approvalRequested),
		agentrt.EventApprovalDecided: on((*Exporter).approvalDecided),
		agentrt.EventModelDispatched: on((*Exporter).modelDispatched),
		agentrt.EventModelCompleted:  on((*Exporter).modelFinished),
		agentrt.EventModelFailed:     on((*Exporter).modelFinished),
	}
}

// attrs collects attributes, cutting every text value at MaxText.
type attrs struct {
	max int
	kv  []attribute.KeyValue
}

func (a *attrs) str(k, v string) {
	if v != "" {
		a.kv = append(a.kv, attribute.String(k, truncate(v, a.max)))
	}
}

// json adds a JSON value as compact text; a JSON string as its text.
func (a *attrs) json(k string, v json.RawMessage) {
	if len(v) == 0 {
		return
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		a.str(k, s)
		return
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		a.str(k, b.String())
		return
	}
	a.str(k, string(v))
}

// value adds a decoded value as compact JSON text.
func (a *attrs) value(k string, v any) {
	if b, err := json.Marshal(v); err == nil && string(b) != "null" {
		a.str(k, string(b))
	}
}

func (a *attrs) int(k string, v int64) { a.kv = append(a.kv, attribute.Int64(k, v)) }

func (a *attrs) bool(k string, v bool) {
	if v {
		a.kv = append(a.kv, attribute.Bool(k, true))
	}
}

func (a *attrs) add(kv ...attribute.KeyValue) { a.kv = append(a.kv, kv...) }

// Handle maps one event. It returns an error only when the TracerProvider
// does not give spans their derived ids.
func (x *Exporter) Handle(ctx context.Context, e agentrt.Event) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, err := agentrt.DecodePayload(e)
	ev := &event{ctx: ctx, e: e, p: p, a: &attrs{max: x.maxText}}
	a := ev.a
	a.int("event.seq", e.Seq)
	if err != nil && (!errors.Is(err, agentrt.ErrUnknownEvent) || !json.Valid(e.Payload)) {
		a.bool("payload.invalid", true)
	}
	var stand struct {
		Truncated bool  `json:"truncated"`
		Length    int64 `json:"length"`
	}
	if json.Unmarshal(e.Payload, &stand) == nil && stand.Truncated && stand.Length > 0 {
		// A payload the store would not load whole: {"truncated":true,...}.
		a.bool("payload.truncated", true)
		a.int("payload.length", stand.Length)
	}
	if h := runHandlers[e.Type]; h != nil {
		return h(x, ev)
	}
	if ev.rs, err = x.runSpan(ctx, e, false, nil); err != nil {
		return err
	}
	if e.StepID == "" {
		// A run-level event: a span event on the run.
		x.describe(ev)
		ev.rs.span.AddEvent(eventName(e.Type), trace.WithTimestamp(e.At), trace.WithAttributes(a.kv...))
		return nil
	}
	if ev.st, err = x.step(ctx, ev.rs, e); err != nil {
		return err
	}
	ev.st.last = e.At
	if h := stepHandlers[e.Type]; h != nil {
		return h(x, ev)
	}
	x.describe(ev)
	ev.st.span.AddEvent(eventName(e.Type), trace.WithTimestamp(e.At), trace.WithAttributes(a.kv...))
	return nil
}

// stepEvent adds ev to its step's span as a span event named for its type,
// with attributes kv.
func (ev *event) stepEvent(kv []attribute.KeyValue) {
	ev.st.span.AddEvent(string(ev.e.Type), trace.WithTimestamp(ev.e.At), trace.WithAttributes(kv...))
}

func (x *Exporter) runCreated(ev *event, p agentrt.RunCreatedPayload) error {
	a := ev.a
	a.str("run.id", ev.e.RunID)
	a.str("run.goal", p.Goal)
	var limits map[string]json.RawMessage
	if b, err := json.Marshal(p.Limits); err == nil && json.Unmarshal(b, &limits) == nil {
		for _, k := range slices.Sorted(maps.Keys(limits)) {
			var n int64
			if json.Unmarshal(limits[k], &n) == nil {
				a.int("limits."+truncate(k, 64), n)
			}
		}
	}
	_, err := x.runSpanIn(ev.ctx, ev.e, true, a, p.Trace)
	return err
}

func (x *Exporter) runFinished(ev *event, p agentrt.RunFinishedPayload) error {
	e, a := ev.e, ev.a
	rs, err := x.endOpenStep(ev.ctx, e)
	if err != nil {
		return err
	}
	for k, s := range rs.open {
		s.End(trace.WithTimestamp(e.At))
		delete(rs.open, k)
	}
	a.str("run.status", string(p.Status))
	a.str("run.reason", string(p.Reason))
	a.str("run.detail", p.Detail)
	if p.By != nil {
		a.str("run.by", *p.By)
	}
	if ev.p != nil {
		a.int("run.steps", int64(p.Steps))
	}
	rs.span.SetAttributes(a.kv...)
	switch p.Status {
	case agentrt.RunCompleted:
		rs.span.SetStatus(codes.Ok, "")
	case agentrt.RunFailed:
		rs.span.SetStatus(codes.Error, truncate(string(p.Reason), x.maxText))
	}
	rs.span.End(trace.WithTimestamp(e.At))
	delete(x.runs, e.RunID)
	return nil
}

func (x *Exporter) stepStarted(ev *event, p agentrt.StepStartedPayload) error {
	rs, err := x.endOpenStep(ev.ctx, ev.e)
	if err != nil {
		return err
	}
	ev.a.str("step.id", ev.e.StepID)
	if ev.p != nil {
		ev.a.int("step.index", int64(p.Index))
	}
	st, err := x.startStep(ev.ctx, rs, ev.e, ev.e.At, ev.a)
	if err != nil {
		return err
	}
	rs.step = st
	return nil
}

func (x *Exporter) stepDecided(ev *event, p agentrt.Decision) error {
	a := ev.a
	a.str("decision.kind", string(p.Kind))
	a.str("decision.tool", p.Tool)
	a.json("decision.args", p.Args)
	a.str("decision.reason", p.Reason)
	a.json("decision.result", p.Result)
	a.str("decision.message", p.Message)
	a.str("decision.invalid_args", p.InvalidArgs)
	a.str("decision.invalid_result", p.InvalidResult)
	a.bool("decision.invalid_base64", p.InvalidBase64)
	ev.st.span.SetAttributes(a.kv[1:]...)
	ev.stepEvent(a.kv[:1])
	return nil
}

func (x *Exporter) stepPolicy(ev *event, p agentrt.StepPolicyPayload) error {
	a := ev.a
	a.str("policy.outcome", string(p.Outcome))
	a.str("policy.reason", p.Reason)
	a.str("policy.kind", p.Kind)
	a.str("policy.id", p.PolicyID)
	a.str("policy.spec_hash", p.SpecHash)
	ev.st.span.SetAttributes(a.kv[1:]...)
	ev.stepEvent(a.kv)
	return nil
}

func (x *Exporter) toolStarted(ev *event, p agentrt.ToolStartedPayload) error {
	ev.a.str("tool.name", p.Tool)
	toolAttrs(ev.a, p.Tool, ev.e.StepID)
	return x.openChild(ev, toolSpan(ev, p.Tool), ev.e.At, ev.a.kv)
}

func (x *Exporter) toolFinished(ev *event, p agentrt.ToolFinishedPayload) error {
	e, a := ev.e, ev.a
	a.str("tool.name", p.Tool)
	if ev.p != nil && !p.Late {
		a.int("tool.duration_ms", p.DurationMS)
	}
	a.str("tool.summary", p.Summary)
	a.str("tool.content_hash", p.ContentHash)
	a.str("tool.error", p.Error)
	if p.Observation != nil {
		a.value("tool.observation", p.Observation)
	}
	if p.Late {
		a.add(semconv.GenAIOperationNameExecuteTool)
		a.str(string(semconv.GenAIToolNameKey), p.Tool)
		a.str(string(semconv.GenAIToolCallIDKey), e.StepID)
		s, err := x.start(ev.ctx, e.RunID, kindLateTool, e.StepID, SpanID(kindStep, e.StepID), SpanLateTool, trace.SpanKindInternal, e.At, a.kv)
		if err != nil {
			return err
		}
		s.End(trace.WithTimestamp(e.At))
		return nil
	}
	s, err := x.takeChild(ev, toolSpan(ev, p.Tool), func(b *attrs) (time.Time, bool) {
		toolAttrs(b, p.Tool, e.StepID)
		start, known := x.eventStart(ev.ctx, e, agentrt.EventToolStarted)
		if !known && ev.p != nil {
			start = e.At.Add(-time.Duration(p.DurationMS) * time.Millisecond)
		}
		return start, known
	})
	if err != nil {
		return err
	}
	s.SetAttributes(a.kv[1:]...)
	if p.Error != "" {
		s.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		s.SetStatus(codes.Error, truncate(p.Error, x.maxText))
	}
	s.End(trace.WithTimestamp(e.At))
	return nil
}

// toolAttrs are the GenAI attributes of a tool's span.
func toolAttrs(a *attrs, tool, stepID string) {
	a.add(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolTypeKey.String("function"))
	a.str(string(semconv.GenAIToolNameKey), tool)
	a.str(string(semconv.GenAIToolCallIDKey), stepID)
}

func toolSpan(ev *event, tool string) child {
	return child{kindTool, ev.e.StepID, spanName(SpanTool, tool), trace.SpanKindInternal}
}

func (x *Exporter) stepFailed(ev *event, p agentrt.StepFailedPayload) error {
	a, st := ev.a, ev.st
	a.str("step.detail", p.Detail)
	a.str("step.observation", string(p.Observation))
	a.str("step.content_hash", p.ContentHash)
	st.span.SetAttributes(a.kv[1:]...)
	st.span.SetStatus(codes.Error, truncate(p.Detail, x.maxText))
	ev.stepEvent(a.kv[:1])
	x.endStepAt(ev.rs, st, ev.e.At)
	return nil
}

func (x *Exporter) stepInterrupted(ev *event, p agentrt.StepInterruptedPayload) error {
	a := ev.a
	a.str("step.previous_status", string(p.PreviousStatus))
	if p.Observation != nil {
		a.value("step.observation", p.Observation)
	}
	// Not the step's end: a takeover may run its call again, on the
	// same step.
	ev.stepEvent(a.kv)
	return nil
}

func (x *Exporter) approvalRequested(ev *event, p agentrt.ApprovalRequestedPayload) error {
	a := ev.a
	a.str("approval.id", p.ApprovalID)
	a.str("approval.kind", p.Kind)
	a.str("approval.reason", p.Reason)
	a.str("approval.hash", p.Hash)
	a.json("approval.capability", p.Capability)
	a.json("approval.presentation", p.Presentation)
	return x.openChild(ev, approvalSpan(p.ApprovalID), ev.e.At, a.kv)
}

func (x *Exporter) approvalDecided(ev *event, p agentrt.ApprovalDecidedPayload) error {
	e, a := ev.e, ev.a
	s, err := x.takeChild(ev, approvalSpan(p.ApprovalID), func(b *attrs) (time.Time, bool) {
		b.str("approval.id", p.ApprovalID)
		if x.store != nil {
			if ap, err := x.store.GetApproval(ev.ctx, e.RunID, p.ApprovalID); err == nil && !ap.CreatedAt.IsZero() {
				return ap.CreatedAt, true
			}
		}
		return e.At, false
	})
	if err != nil {
		return err
	}
	a.str("approval.status", string(p.Status))
	a.str("approval.by", p.By)
	a.str("approval.note", p.Note)
	s.SetAttributes(a.kv...)
	s.End(trace.WithTimestamp(e.At))
	return nil
}

func approvalSpan(id string) child {
	return child{kindApproval, id, SpanApproval, trace.SpanKindInternal}
}

func (x *Exporter) modelDispatched(ev *event, p agentrt.ModelDispatchedPayload) error {
	modelStart(p, ev.a)
	return x.openChild(ev, modelSpan(p.CallID, p.Model), ev.e.At, ev.a.kv)
}

func modelSpan(callID, model string) child {
	return child{kindModel, callID, spanName(SpanModel, model), trace.SpanKindClient}
}

func (x *Exporter) modelFinished(ev *event, p agentrt.ModelCallFinishedPayload) error {
	e, a := ev.e, ev.a
	s, err := x.takeChild(ev, modelSpan(p.CallID, p.Model), func(b *attrs) (time.Time, bool) {
		modelStart(agentrt.ModelDispatchedPayload{CallID: p.CallID, Attempt: p.Attempt, Model: p.Model}, b)
		start, known := e.At.Add(-time.Duration(p.LatencyMS)*time.Millisecond), false
		if x.store != nil {
			if calls, err := x.store.ListModelCalls(ev.ctx, e.RunID); err == nil {
				for _, c := range calls {
					if c.ID == p.CallID {
						start, known = c.DispatchedAt, true
					}
				}
			}
		}
		return start, known
	})
	if err != nil {
		return err
	}
	a.str("model.status", string(p.Status))
	a.int("model.input_tokens", p.Usage.InputTokens)
	a.int("model.output_tokens", p.Usage.OutputTokens)
	a.int("model.cached_input_tokens", p.Usage.CachedInputTokens)
	a.int("model.cost_micros", int64(p.Cost))
	a.int("model.latency_ms", p.LatencyMS)
	a.str("model.error", p.Error)
	a.bool("model.late", p.Late)
	a.add(semconv.GenAIUsageInputTokens(int(p.Usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(p.Usage.OutputTokens)))
	if p.StopReason != "" {
		a.add(semconv.GenAIResponseFinishReasons(truncate(p.StopReason, 64)))
	}
	s.SetAttributes(a.kv[1:]...)
	if e.Type == agentrt.EventModelFailed {
		s.SetAttributes(semconv.ErrorTypeKey.String(truncate(string(p.Status), 64)))
		s.SetStatus(codes.Error, truncate(p.Error, x.maxText))
	}
	s.End(trace.WithTimestamp(e.At))
	return nil
}

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

// modelStart adds what a model span knows from its dispatch.
func modelStart(p agentrt.ModelDispatchedPayload, a *attrs) {
	a.str("model.call_id", p.CallID)
	a.int("model.attempt", int64(p.Attempt))
	a.str("model.name", p.Model)
	a.add(semconv.GenAIOperationNameChat)
	a.str(string(semconv.GenAIRequestModelKey), p.Model)
	a.str(string(semconv.GenAIProviderNameKey), p.Provider)
	if p.MaxOutputTokens > 0 {
		a.add(semconv.GenAIRequestMaxTokens(int(p.MaxOutputTokens)))
	}
}

// describe adds the attributes of events that are span events.
func (x *Exporter) describe(ev *event) {
	if d := describers[ev.e.Type]; d != nil {
		d(ev.p, ev.a)
		return
	}
	ev.a.str("event.type", string(ev.e.Type))
}

// eventName is the span event's name: the event type for the types the
// runtime writes, SpanEvent for any other (its type is an attribute).
func eventName(t agentrt.EventType) string {
	switch t {
	case agentrt.EventRunStarted, agentrt.EventRunResumed, agentrt.EventLeaseTakenOver, agentrt.EventLimitExceeded,
		agentrt.EventLoopDetected, agentrt.EventStepDecided, agentrt.EventStepPolicy, agentrt.EventStepFailed,
		agentrt.EventStepInterrupted:
		return string(t)
	}
	return SpanEvent
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
