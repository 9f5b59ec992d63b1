package otel

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/agentrt/agentrt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

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
		agentrt.EventStepInterrupted, agentrt.EventDisclosureApplied:
		return string(t)
	}
	return SpanEvent
}
