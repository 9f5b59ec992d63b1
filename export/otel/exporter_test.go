package otel_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentrt/agentrt/internal/testhook"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	agentotel "github.com/agentrt/agentrt/export/otel"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func hexTrace(run string) string     { return agentotel.TraceID(run).String() }
func hexSpan(kind, id string) string { return agentotel.SpanID(kind, id).String() }

// A two-step run is one trace: the run span (status Ok) is the root, each
// step its child, the tool execution a child of its step with the GenAI
// tool attributes, and the decision and policy ride on the step, with the
// policy's id and the tool's spec hash.
func TestExporter_RunAndStepSpans(t *testing.T) {
	w := newWorld(t)
	run := w.twoSteps(t)
	steps, _ := w.st.ListSteps(context.Background(), run.ID)
	spans := exportedSpans(t, w, agentotel.Config{})
	if len(spans) != 4 {
		t.Fatalf("%d spans, want run, 2 steps, 1 tool: %+v", len(spans), spans)
	}
	r := one(t, spans, agentotel.SpanRun)
	if r.TraceID != hexTrace(run.ID) || r.SpanID != hexSpan("run", run.ID) || r.Parent != "" ||
		r.Status != tracepb.Status_STATUS_CODE_OK || r.Attrs["run.goal"] != "summarise notes.txt" ||
		r.Attrs["run.status"] != "COMPLETED" || r.Attrs["limits.max_steps"] != int64(50) || r.Scope != agentotel.Scope {
		t.Fatalf("run span = %+v", r)
	}
	if !r.Start.Equal(run.CreatedAt) || !r.End.Equal(run.FinishedAt) {
		t.Fatalf("run span %v..%v, run %v..%v", r.Start, r.End, run.CreatedAt, run.FinishedAt)
	}
	ss := byName(spans, agentotel.SpanStep)
	if len(ss) != 2 {
		t.Fatalf("%d step spans", len(ss))
	}
	for i, s := range ss {
		if s.TraceID != r.TraceID || s.Parent != r.SpanID || s.SpanID != hexSpan("step", steps[i].ID) || s.Attrs["step.index"] != int64(i) {
			t.Fatalf("step %d span = %+v", i, s)
		}
	}
	s0 := ss[0]
	if s0.Attrs["decision.kind"] != "tool_call" || s0.Attrs["decision.tool"] != "read" || s0.Attrs["decision.args"] != `{"path":"notes.txt"}` ||
		s0.Attrs["decision.reason"] != "look first" || s0.Attrs["policy.outcome"] != "allow" || s0.Attrs["policy.id"] != "policy-v7" ||
		s0.Attrs["policy.spec_hash"] != steps[0].SpecHash || steps[0].SpecHash == "" {
		t.Fatalf("step 0 attributes = %v", s0.Attrs)
	}
	tool := one(t, spans, "execute_tool read")
	if tool.Parent != s0.SpanID || tool.TraceID != r.TraceID || tool.Attrs["gen_ai.operation.name"] != "execute_tool" ||
		tool.Attrs["gen_ai.tool.name"] != "read" || tool.Attrs["gen_ai.tool.call.id"] != steps[0].ID ||
		tool.Attrs["gen_ai.tool.type"] != "function" || tool.Attrs["tool.summary"] != "read 5 bytes" {
		t.Fatalf("tool span = %+v", tool)
	}
	if tool.Start.Before(s0.Start) || tool.End.After(s0.End) || !s0.End.After(s0.Start) {
		t.Fatalf("tool %v..%v outside step %v..%v", tool.Start, tool.End, s0.Start, s0.End)
	}
}

// Each model attempt is a client span named and attributed as the GenAI
// conventions say: operation chat, the provider the model names, the
// requested model and output cap, the usage and the finish reason. A
// failed attempt has status Error and its provider's error text.
func TestExporter_ModelSpansCarryTheGenAIAttributes(t *testing.T) {
	w := newWorld(t)
	run := w.withModel(t, "upstream said no", scripted.Complete(`{}`))
	if run.Status != agentrt.RunCompleted {
		t.Fatalf("run %s %s %s", run.Status, run.Reason, run.ReasonDetail)
	}
	calls, _ := w.st.ListModelCalls(context.Background(), run.ID)
	spans := exportedSpans(t, w, agentotel.Config{})
	ms := byName(spans, "chat gpt-test")
	if len(ms) != 2 || len(calls) != 2 {
		t.Fatalf("%d model spans for %d calls", len(ms), len(calls))
	}
	step := one(t, spans, agentotel.SpanStep)
	for i, m := range ms {
		want := map[string]any{
			"gen_ai.operation.name":      "chat",
			"gen_ai.provider.name":       "openai",
			"gen_ai.request.model":       "gpt-test",
			"gen_ai.request.max_tokens":  int64(64),
			"model.call_id":              calls[i].ID,
			"model.attempt":              int64(calls[i].Attempt),
			"gen_ai.usage.input_tokens":  calls[i].Usage.InputTokens,
			"gen_ai.usage.output_tokens": calls[i].Usage.OutputTokens,
		}
		for k, v := range want {
			if m.Attrs[k] != v {
				t.Errorf("attempt %d: %s = %v (%T), want %v", i+1, k, m.Attrs[k], m.Attrs[k], v)
			}
		}
		if m.Kind != tracepb.Span_SPAN_KIND_CLIENT || m.Parent != step.SpanID || m.SpanID != hexSpan("model", calls[i].ID) {
			t.Errorf("attempt %d: kind %v parent %s span %s", i+1, m.Kind, m.Parent, m.SpanID)
		}
		if !m.Start.Equal(calls[i].DispatchedAt) || !m.End.Equal(calls[i].CompletedAt) {
			t.Errorf("attempt %d: %v..%v, call %v..%v", i+1, m.Start, m.End, calls[i].DispatchedAt, calls[i].CompletedAt)
		}
	}
	failed, ok := ms[0], ms[1]
	if failed.Status != tracepb.Status_STATUS_CODE_ERROR || failed.Attrs["model.error"] != "upstream said no" || failed.Attrs["error.type"] == nil ||
		failed.Attrs["gen_ai.response.finish_reasons"] != nil {
		t.Fatalf("failed attempt = %+v", failed)
	}
	if ok.Status == tracepb.Status_STATUS_CODE_ERROR || ok.Attrs["gen_ai.usage.input_tokens"] != int64(12) || ok.Attrs["gen_ai.usage.output_tokens"] != int64(5) ||
		fmt.Sprint(ok.Attrs["gen_ai.response.finish_reasons"]) != "[end_turn]" {
		t.Fatalf("completed attempt = %+v", ok)
	}
}

// An approval wait is a span from the request to the decision, under its
// step, which stays open across the wait.
func TestExporter_ApprovalWaitIsASpan(t *testing.T) {
	w := newWorld(t)
	run := w.approved(t)
	as, _ := w.st.ListApprovals(context.Background(), run.ID)
	spans := exportedSpans(t, w, agentotel.Config{})
	a := one(t, spans, agentotel.SpanApproval)
	step := byName(spans, agentotel.SpanStep)[0]
	if a.SpanID != hexSpan("approval", as[0].ID) || a.Parent != step.SpanID || a.Attrs["approval.status"] != "approved" ||
		a.Attrs["approval.by"] != "alice" || a.Attrs["approval.hash"] != as[0].Hash || a.Attrs["approval.kind"] != "local_mutation" {
		t.Fatalf("approval span = %+v", a)
	}
	if !a.Start.Equal(as[0].CreatedAt) || !a.End.Equal(as[0].DecidedAt) || a.Start.After(step.Start) == false && !a.Start.After(step.Start.Add(-time.Nanosecond)) {
		t.Fatalf("approval %v..%v, recorded %v..%v", a.Start, a.End, as[0].CreatedAt, as[0].DecidedAt)
	}
	if step.Start.After(a.Start) || step.End.Before(a.End) {
		t.Fatalf("step %v..%v does not cover the wait %v..%v", step.Start, step.End, a.Start, a.End)
	}
	one(t, spans, "execute_tool write")
}

// Run and step ids derive from the records, and are valid OpenTelemetry
// ids; the values are fixed (golden).
func TestIDs_DerivedAndValid(t *testing.T) {
	if got := agentotel.TraceID("run-1").String(); got != "93afafd5ba988f2a2bebf175c7cde8d6" {
		t.Fatalf("TraceID(run-1) = %s", got)
	}
	if got := agentotel.SpanID("run", "run-1").String(); got != "d925db6dbbd9dfb1" {
		t.Fatalf("SpanID(run, run-1) = %s", got)
	}
	if agentotel.SpanID("step", "x") == agentotel.SpanID("run", "x") || agentotel.TraceID("a") == agentotel.TraceID("b") {
		t.Fatal("different records share an id")
	}
	for _, id := range []string{"", "run-1", strings.Repeat("x", 5000)} {
		if !agentotel.TraceID(id).IsValid() || !agentotel.SpanID("run", id).IsValid() {
			t.Fatalf("invalid id for %q", id)
		}
	}
}

// A provider without the IDGenerator is refused on the first span, since
// its traces would change on every restart.
func TestExporter_RefusesAProviderWithoutTheIDGenerator(t *testing.T) {
	w := newWorld(t)
	w.twoSteps(t)
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	x := exporter(t, w, agentotel.Config{TracerProvider: tp})
	ro, _ := sqlite.OpenExisting(w.path, true)
	defer ro.Close()
	f := export.Follower{Store: ro, Once: true}
	if err := f.Follow(context.Background(), x.Sink(context.Background())); !errors.Is(err, agentotel.ErrIDs) {
		t.Fatalf("Follow = %v, want ErrIDs", err)
	}
	if _, err := agentotel.NewExporter(agentotel.Config{}); err == nil {
		t.Fatal("an Exporter without a TracerProvider was made")
	}
	if _, err := agentotel.NewExporter(agentotel.Config{TracerProvider: tp, MaxText: 10}); err == nil {
		t.Fatal("MaxText 10 was accepted")
	}
}

// key is what must be the same in two exports of one record.
func keys(spans []span) []string {
	var out []string
	for _, s := range spans {
		unknown := ""
		if s.Attrs["span.start_unknown"] == true {
			unknown = " start-unknown"
		}
		out = append(out, fmt.Sprintf("%s %s/%s<-%s %s..%s%s", s.Name, s.TraceID, s.SpanID, s.Parent,
			s.Start.Format(time.RFC3339Nano), s.End.Format(time.RFC3339Nano), unknown))
	}
	sort.Strings(out)
	return out
}

// Exporting the same database again, from a fresh process, or in pieces
// with the exporter restarted (its open spans lost) at many points, gives
// the same spans: the same ids, parents and times.
func TestExporter_DeterministicAcrossRestarts(t *testing.T) {
	w := newWorld(t)
	w.twoSteps(t)
	w.approved(t)
	w.withModel(t, "no", scripted.ToolCall("read", `{}`, "x"), scripted.Complete(`{}`))
	total, _, _ := w.st.ChainHead(context.Background())

	export1 := func(splits ...int64) []string {
		rcv := newReceiver(t)
		tp := rcv.provider(t)
		cur := &export.MemCursor{}
		ro, _ := sqlite.OpenExisting(w.path, true)
		defer ro.Close()
		exportRestarting(t, w, tp, export.Follower{Store: ro, Cursor: cur, PageSize: 3, Once: true}, append(splits, total)...)
		flush(t, tp)
		return keys(rcv.got())
	}
	want := export1()
	if len(want) < 10 {
		t.Fatalf("only %d spans", len(want))
	}
	if again := export1(); strings.Join(again, "\n") != strings.Join(want, "\n") {
		t.Fatalf("a second export differs:\n%s\nwant\n%s", strings.Join(again, "\n"), strings.Join(want, "\n"))
	}
	for at := int64(2); at < total; at += 3 {
		got := export1(at)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("restarted after seq %d:\n%s\nwant\n%s", at, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// A run whose process crashed mid-step and that another process took over
// is one trace: the run span starts at the run's creation (from the store,
// not the exporter's memory, which a restart lost too), the interrupted
// step's span carries the interruption and the takeover is an event of the
// run span, and the run ends Ok.
func TestExporter_InterruptedRunContinuesTheTrace(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	// The crashing process has its own store, closed at the crash, so it
	// writes nothing more.
	st1, err := sqlite.Open(w.path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := make(chan struct{})
	var fired atomic.Bool
	// The engine's crash hook and lease clock are internal to the agentrt
	// module tree, which this test module belongs to; no consumer reaches them.
	restore := testhook.Set(func(point, runID string, step int) {
		if point != testhook.ToolStarted || step != 0 || !fired.CompareAndSwap(false, true) {
			return
		}
		st1.Close()
		close(crashed)
		runtime.Goexit()
	})
	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read", `{"path":"a"}`, "look"), scripted.ToolCall("read", `{"path":"b"}`, "look again"), scripted.Complete(`{}`)}}
	d1 := w.driverOn(t, st1, agent, nil)
	go d1.StartWithID(ctx, "crashy", "survive a crash", agentrt.DefaultLimits())
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("never crashed")
	}
	restore()

	rcv := newReceiver(t)
	cursor := &export.MemCursor{}
	// The first exporter sees the run up to the crash, then its process
	// goes too: nothing it had open is exported.
	tp1 := rcv.provider(t)
	exportAll(t, w, exporter(t, w, agentotel.Config{TracerProvider: tp1}), cursor)
	flush(t, tp1)
	if n := len(rcv.got()); n != 0 {
		t.Fatalf("%d spans ended before the takeover", n)
	}

	d2 := w.driver(t, agent, nil)
	testhook.SetWallClock(d2, func() time.Time { return time.Now().Add(time.Hour) })
	run, err := d2.Resume(ctx, "crashy")
	if err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("resume = %s %v", run.Status, err)
	}
	tp2 := rcv.provider(t)
	exportAll(t, w, exporter(t, w, agentotel.Config{TracerProvider: tp2}), cursor)
	flush(t, tp2)
	spans := rcv.got()
	for _, s := range spans {
		if s.TraceID != hexTrace("crashy") {
			t.Fatalf("span %s in trace %s", s.Name, s.TraceID)
		}
	}
	r := one(t, spans, agentotel.SpanRun)
	if !r.Start.Equal(run.CreatedAt) || r.Attrs["span.start_unknown"] == true || r.Status != tracepb.Status_STATUS_CODE_OK {
		t.Fatalf("run span %v (created %v): %+v", r.Start, run.CreatedAt, r)
	}
	var taken bool
	for _, e := range r.Events {
		taken = taken || e == "lease.taken_over"
	}
	if !taken {
		t.Fatalf("run span events %v lack the takeover", r.Events)
	}
	steps, _ := w.st.ListSteps(ctx, "crashy")
	ss := byName(spans, agentotel.SpanStep)
	if len(ss) != len(steps) {
		t.Fatalf("%d step spans for %d steps", len(ss), len(steps))
	}
	s0 := ss[0]
	if s0.SpanID != hexSpan("step", steps[0].ID) || !s0.Start.Equal(steps[0].StartedAt) || s0.Parent != r.SpanID ||
		!strings.Contains(strings.Join(s0.Events, " "), "step.interrupted") {
		t.Fatalf("interrupted step span = %+v (step started %v)", s0, steps[0].StartedAt)
	}
}

// Every piece of text a model chose (the goal, a reason, arguments, a
// message, a provider's error) is cut at MaxText on a rune boundary with a
// marker, stays valid UTF-8, and appears in no span name.
func TestExporter_TruncatesModelChosenText(t *testing.T) {
	const max = 64
	long := func(tag string) string { return tag + strings.Repeat("é😀x", 100) }
	w := newWorld(t)
	ctx := context.Background()
	m := &providerModel{GenerateFunc: func(n int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		if n == 1 {
			return agentrt.ModelResponse{}, errors.New(long("PROVIDERERR"))
		}
		return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn}, nil
	}}
	agent := &modelAgent{then: []agentrt.Decision{
		scripted.ToolCall("read", `{"path":"`+long("ARGS")+`"}`, long("REASON")),
		scripted.Fail(long("MESSAGE")),
	}}
	d := w.driver(t, agent, &agentrt.ModelConfig{Model: m})
	if _, err := d.Start(ctx, long("GOAL"), agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	spans := exportedSpans(t, w, agentotel.Config{MaxText: max})
	seen := map[string]bool{}
	check := func(where string, attrs map[string]any) {
		for k, v := range attrs {
			s, ok := v.(string)
			if !ok {
				continue
			}
			if !utf8.ValidString(s) {
				t.Errorf("%s %s is not valid UTF-8", where, k)
			}
			head, marker, cut := strings.Cut(s, "…[truncated: ")
			if len(head) > max || (!cut && len(s) > max) {
				t.Errorf("%s %s is %d bytes before any marker: %.80q", where, k, len(head), s)
			}
			if cut && !strings.HasSuffix(marker, " bytes]") {
				t.Errorf("%s %s has a broken marker: %q", where, k, marker)
			}
			for _, tag := range []string{"GOAL", "ARGS", "REASON", "MESSAGE", "PROVIDERERR"} {
				if strings.Contains(s, tag) {
					if !cut {
						t.Errorf("%s %s holds %s uncut", where, k, tag)
					}
					seen[tag] = true
				}
			}
		}
	}
	for _, s := range spans {
		for _, tag := range []string{"GOAL", "ARGS", "REASON", "MESSAGE", "PROVIDERERR", "é", "😀"} {
			if strings.Contains(s.Name, tag) || strings.Contains(s.StatusMessage, tag) && len(s.StatusMessage) > max+40 {
				t.Errorf("span name or status %q / %q carries model text", s.Name, s.StatusMessage)
			}
		}
		check(s.Name, s.Attrs)
		for i, ea := range s.EventAttrs {
			check(s.Name+" event "+s.Events[i], ea)
		}
	}
	for _, tag := range []string{"GOAL", "ARGS", "REASON", "MESSAGE", "PROVIDERERR"} {
		if !seen[tag] {
			t.Errorf("no attribute carried the head of the %s text", tag)
		}
	}
}

// What disclosure did to a tool's result is a disclosure.applied span
// event on its step: the tool, the count, the rules and the pointers, and
// neither the value nor its digest.
func TestExporter_DisclosureAppliedIsAStepEvent(t *testing.T) {
	w := newWorld(t)
	const secret = "hunter2hunter2"
	redact := agentrt.DisclosureFunc(func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
		return agentrt.DisclosureOutcome{Content: in.Content, Summary: agentrt.DisclosureMarker("password"), FailureMessage: in.FailureMessage,
			Blocks: in.Blocks, Findings: []agentrt.DisclosureFinding{{Rule: "password", Pointer: "#summary", Action: agentrt.DisclosureRedacted, Value: secret}}}, nil
	})
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: w.st, Tools: tools, Disclosure: redact,
		Policy: policy{agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow}}, Now: w.clock.Now, NewID: w.ids.ID},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("read", `{"path":"notes.txt"}`, ""), scripted.Complete(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Start(context.Background(), "read", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	step := byName(exportedSpans(t, w, agentotel.Config{}), agentotel.SpanStep)[0]
	for i, name := range step.Events {
		if name != string(agentrt.EventDisclosureApplied) {
			continue
		}
		a := step.EventAttrs[i]
		if a["disclosure.tool"] != "read" || a["disclosure.count"] != int64(1) || a["disclosure.rules"] != "password" ||
			a["disclosure.pointers"] != "#summary" || a["disclosure.blocked"] != nil {
			t.Fatalf("disclosure.applied attributes %v", a)
		}
		if strings.Contains(fmt.Sprint(a), secret) || strings.Contains(fmt.Sprint(a), "digest") {
			t.Fatalf("the span event carries the value or its digest: %v", a)
		}
		return
	}
	t.Fatalf("the step span has no disclosure.applied event: %v", step.Events)
}
