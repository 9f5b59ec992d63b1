package otel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
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
	agentrt.EventDisclosureApplied: func(v any, a *attrs) {
		// What the rules did, never a value (the record holds none).
		p, _ := v.(agentrt.DisclosureAppliedPayload)
		a.str("disclosure.tool", p.Tool)
		a.int("disclosure.count", int64(p.Count))
		a.bool("disclosure.blocked", p.Blocked)
		a.str("disclosure.rules", strings.Join(p.Rules, ","))
		var ptrs []string
		for _, f := range p.Findings {
			ptrs = append(ptrs, f.Pointer)
		}
		slices.Sort(ptrs)
		a.str("disclosure.pointers", strings.Join(slices.Compact(ptrs), ","))
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
