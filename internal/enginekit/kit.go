// Package enginekit holds the test helpers the engine suite (enginetest)
// and the root package's other tests share: a clock moved by hand, a
// clock that ticks on each reading, ids in sequence, tools and agents that
// count their calls, a store that counts its writes, a policy that records
// what it was handed, readers of what was stored, and the core of a test's
// driver environment. It is internal: only tests use it (the approver,
// console, command-line and OpenTelemetry tests take its clocks and ids
// too).
package enginekit

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
)

// TestZone is the zone the fake clock reports times in. It is not UTC, as
// time.Now is usually not, so a cache that keeps the clock's zone where the
// store keeps UTC is caught.
var TestZone = time.FixedZone("UTC+2", 2*60*60)

// FakeClock is a clock the test moves by hand.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func NewClock() *FakeClock {
	return ClockAt(time.Date(2026, 3, 4, 5, 6, 7, 8, TestZone))
}

// ClockAt is a FakeClock that starts at t.
func ClockAt(t time.Time) *FakeClock { return &FakeClock{t: t} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// SeqIDs makes ids "<prefix>1", "<prefix>2", ... so a run reads the same on
// every execution: an IDCounter's, the prefix taken literally.
func SeqIDs(prefix string) func() string {
	return CountIDs(strings.ReplaceAll(prefix, "%", "%%") + "%d").ID
}

type E = agentrt.EventType

// Short names for the event types, so expected sequences read as a list.
const (
	RunCreated    = agentrt.EventRunCreated
	RunStarted    = agentrt.EventRunStarted
	RunFinished   = agentrt.EventRunFinished
	RunResumed    = agentrt.EventRunResumed
	StepStarted   = agentrt.EventStepStarted
	StepDecided   = agentrt.EventStepDecided
	StepPolicy    = agentrt.EventStepPolicy
	ToolStarted   = agentrt.EventToolStarted
	ToolFinished  = agentrt.EventToolFinished
	StepFailed    = agentrt.EventStepFailed
	StepInterrupt = agentrt.EventStepInterrupted
	ApprRequested = agentrt.EventApprovalRequest
	ApprDecided   = agentrt.EventApprovalDecided
	LimitExceeded = agentrt.EventLimitExceeded
	LoopDetected  = agentrt.EventLoopDetected
	LeaseTakeover = agentrt.EventLeaseTakenOver
)

// Seq concatenates event-type lists, so a test can name the shape of a step
// once and repeat it.
func Seq(parts ...[]E) []E {
	var out []E
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The event shapes of the ordinary steps.
var (
	EvStart    = []E{RunCreated, RunStarted}
	EvToolStep = []E{StepStarted, StepDecided, StepPolicy, ToolStarted, ToolFinished}
	EvInvalid  = []E{StepStarted, StepDecided, StepFailed}
	EvDenied   = []E{StepStarted, StepDecided, StepPolicy, StepFailed}
	EvPause    = []E{StepStarted, StepDecided, StepPolicy, ApprRequested}
	EvComplete = []E{StepStarted, StepDecided, RunFinished}
)

// EventTypes lists the types of a run's stored events in order.
func EventTypes(t testing.TB, st agentrt.StoreReader, runID string) []E {
	t.Helper()
	evs := mustRead(t, "ListEvents", st.ListEvents, runID)
	out := make([]E, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// RequireEvents fails unless the run's stored events have exactly the types
// want, in order.
func RequireEvents(t testing.TB, st agentrt.StoreReader, runID string, want ...[]E) {
	t.Helper()
	w := Seq(want...)
	got := EventTypes(t, st, runID)
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("events of run %s:\n got  %v\n want %v", runID, got, w)
	}
}

// EventsOf returns the run's stored events of one type.
func EventsOf(t testing.TB, st agentrt.StoreReader, runID string, typ E) []agentrt.Event {
	t.Helper()
	evs := mustRead(t, "ListEvents", st.ListEvents, runID)
	var out []agentrt.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Payload decodes an event's payload into a map.
func Payload(t testing.TB, e agentrt.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("Payload of %s: %v", e.Type, err)
	}
	return m
}

func MustSteps(t testing.TB, st agentrt.StoreReader, runID string) []agentrt.Step {
	t.Helper()
	return mustRead(t, "ListSteps", st.ListSteps, runID)
}

func MustApprovals(t testing.TB, st agentrt.StoreReader, runID string) []agentrt.Approval {
	t.Helper()
	return mustRead(t, "ListApprovals", st.ListApprovals, runID)
}

func MustRun(t testing.TB, st agentrt.StoreReader, runID string) agentrt.Run {
	t.Helper()
	return mustRead(t, "GetRun", st.GetRun, runID)
}

// mustRead returns what the store's reader read (named by what) returns
// for runID, and fails t on its error.
func mustRead[T any](t testing.TB, what string, read func(context.Context, string) (T, error), runID string) T {
	t.Helper()
	v, err := read(context.Background(), runID)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// RequireEnded fails unless the run ended with status and reason.
func RequireEnded(t testing.TB, run agentrt.Run, status agentrt.RunStatus, reason agentrt.TerminalReason) {
	t.Helper()
	if run.Status != status || run.Reason != reason {
		t.Fatalf("run %s is %s/%s (%q), want %s/%s", run.ID, run.Status, run.Reason, run.ReasonDetail, status, reason)
	}
}

// RequireObs fails unless the step's observation has the kind.
func RequireObs(t testing.TB, st agentrt.Step, kind agentrt.ObservationKind) {
	t.Helper()
	if st.Observation == nil || st.Observation.Kind != kind {
		t.Fatalf("step %d observation = %+v, want kind %s", st.Index, st.Observation, kind)
	}
}

// ObsContent decodes a step's observation content into a map.
func ObsContent(t testing.TB, st agentrt.Step) map[string]any {
	t.Helper()
	if st.Observation == nil {
		t.Fatalf("step %d has no observation", st.Index)
	}
	var m map[string]any
	if err := json.Unmarshal(st.Observation.Content, &m); err != nil {
		t.Fatalf("step %d observation content %s: %v", st.Index, st.Observation.Content, err)
	}
	return m
}

// A schema with one required string and nothing else.
const PathSchema = `{"type":"object","properties":{"path":{"type":"string","maxLength":200}},"required":["path"],"additionalProperties":false}`

// Counted is a tool that counts its executions and records the arguments
// each was handed.
type Counted struct {
	agentrt.ToolFunc
	mu    sync.Mutex
	calls []string
}

func (c *Counted) Call(ctx context.Context, Call agentrt.ToolCall) (agentrt.ToolResult, error) {
	c.mu.Lock()
	c.calls = append(c.calls, string(Call.Args))
	c.mu.Unlock()
	return c.ToolFunc.Call(ctx, Call)
}

// n is how many times the tool ran.
func (c *Counted) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// args is what each execution was handed.
func (c *Counted) Args() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

// NewTool builds a Counted tool; a nil fn echoes {"ok":true}.
func NewTool(name string, se agentrt.SideEffect, schema string, fn func(ctx context.Context, Call agentrt.ToolCall) (agentrt.ToolResult, error)) *Counted {
	if fn == nil {
		fn = func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`), Summary: "ok"}, nil
		}
	}
	return &Counted{ToolFunc: agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(schema),
			SideEffect: se, Timeout: time.Minute},
		Fn: fn,
	}}
}

// CountingAgent wraps an agent and counts how often it was asked.
type CountingAgent struct {
	Inner agentrt.Agent
	N     atomic.Int64
}

func (a *CountingAgent) Decide(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	a.N.Add(1)
	return a.Inner.Decide(ctx, in)
}

func Script(ds ...agentrt.Decision) *CountingAgent {
	return &CountingAgent{Inner: &scripted.Agent{Decisions: ds}}
}

// RecordingPolicy wraps a policy, counting evaluations and keeping the bytes
// of the arguments and schema each was handed.
type RecordingPolicy struct {
	inner   agentrt.Policy
	mu      sync.Mutex
	args    []string
	schemas []string
}

func (p *RecordingPolicy) Evaluate(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
	p.mu.Lock()
	p.args = append(p.args, string(req.Args))
	p.schemas = append(p.schemas, string(req.Spec.InputSchema))
	p.mu.Unlock()
	return p.inner.Evaluate(ctx, req, view)
}

func (p *RecordingPolicy) N() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.args)
}

func (p *RecordingPolicy) Seen() ([]string, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.args...), append([]string(nil), p.schemas...)
}

func Recording(p agentrt.Policy) *RecordingPolicy { return &RecordingPolicy{inner: p} }

// Env is one test's store, clock and observer.
type Env struct {
	T     testing.TB
	Store agentrt.Store
	Clock *FakeClock
	IDs   func() string

	mu    sync.Mutex
	heard []agentrt.Event
}

// NewEnv is an Env on st, with a fresh clock and ids.
func NewEnv(t testing.TB, st agentrt.Store) *Env {
	return &Env{T: t, Store: st, Clock: NewClock(), IDs: SeqIDs("id")}
}

func (e *Env) Observe(ev agentrt.Event) {
	e.mu.Lock()
	e.heard = append(e.heard, ev)
	e.mu.Unlock()
}

func (e *Env) Observed() []agentrt.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agentrt.Event(nil), e.heard...)
}

// Config is a driver configuration on the env's store, clock and ids.
func (e *Env) Config(agent agentrt.Agent, policy agentrt.Policy, Tools ...agentrt.Tool) agentrt.Config {
	return agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:    e.Store,
			Policy:   policy,
			Tools:    Tools,
			Observer: e.Observe,
			Now:      e.Clock.Now,
			NewID:    e.IDs,
		},
		Agent: agent,
	}
}

func (e *Env) Driver(agent agentrt.Agent, policy agentrt.Policy, Tools ...agentrt.Tool) *agentrt.Driver {
	e.T.Helper()
	return e.DriverFor(e.Config(agent, policy, Tools...))
}

func (e *Env) DriverFor(cfg agentrt.Config) *agentrt.Driver {
	e.T.Helper()
	d, err := agentrt.NewDriver(cfg)
	if err != nil {
		e.T.Fatalf("NewDriver: %v", err)
	}
	return d
}

// StartScripted starts goal under DefaultLimits on a driver of ec whose
// agent makes the decisions ds in order; a refusal fails t.
func StartScripted(t testing.TB, ec agentrt.EngineConfig, goal string, ds ...agentrt.Decision) agentrt.Run {
	t.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: ec, Agent: &scripted.Agent{Decisions: ds}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Start(context.Background(), goal, agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *Env) Operator() agentrt.Operator {
	return agentrt.Operator{Store: e.Store, Observer: e.Observe, Now: e.Clock.Now}
}

// Tools converts counted tools to the interface slice a config takes.
func Tools(ts ...*Counted) []agentrt.Tool {
	out := make([]agentrt.Tool, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

// Limits is DefaultLimits changed by fn.
func Limits(fn func(*agentrt.Limits)) agentrt.Limits {
	l := agentrt.DefaultLimits()
	if fn != nil {
		fn(&l)
	}
	return l
}

func Call(tool, args string) agentrt.Decision { return scripted.ToolCall(tool, args, "because") }

func Complete(result string) agentrt.Decision { return scripted.Complete(result) }

// Fixed is a policy answering with a fixed decision.
func Fixed(pd agentrt.PolicyDecision) agentrt.PolicyFunc {
	return func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
		return pd, nil
	}
}

// PendingApproval returns the run's only pending approval.
func PendingApproval(t testing.TB, st agentrt.StoreReader, runID string) agentrt.Approval {
	t.Helper()
	var found []agentrt.Approval
	for _, a := range MustApprovals(t, st, runID) {
		if a.Status == agentrt.ApprovalPending {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		t.Fatalf("run %s has %d pending approvals, want 1", runID, len(found))
	}
	return found[0]
}

// Nested returns depth levels of arrays around v.
func Nested(depth int, v string) string {
	return strings.Repeat("[", depth) + v + strings.Repeat("]", depth)
}

// NewCountingServer serves 404 to everything and reports each path asked
// for; it returns the server's URL.
func NewCountingServer(t testing.TB, hit func(path string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit(r.URL.Path)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// PausedRun starts run-1 whose one send call the default policy pauses.
func PausedRun(t testing.TB, e *Env, args string) (*Counted, agentrt.Approval) {
	t.Helper()
	send := NewTool("send", agentrt.RemoteMutation, PathSchema, nil)
	d := e.Driver(Script(Call("send", args)), agentrt.DefaultPolicy(), send)
	run, err := d.StartWithID(context.Background(), "run-1", "g", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
	}
	if send.N() != 0 {
		t.Fatalf("send ran %d times before an approval", send.N())
	}
	return send, PendingApproval(t, e.Store, "run-1")
}

// BeginGate makes a Gate on cfg, begins run id with goal and limits, and
// opens its first step; any failure fails t.
func BeginGate(t testing.TB, cfg agentrt.EngineConfig, id, goal string, limits agentrt.Limits) (*agentrt.Gate, *agentrt.GateSession, *agentrt.OpenStep) {
	t.Helper()
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s, step := BeginStep(t, g, id, goal, limits)
	return g, s, step
}

// OpenRaw opens the SQLite file at path with plain database/sql, closed
// when t ends, to tamper with it as another writer could. The test's
// binary must link a driver named "sqlite" (the sqlite package does).
func OpenRaw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// MustExec runs one statement on a raw handle, whatever rows it changes;
// an error fails t.
func MustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// Exec runs one statement on a raw handle, outside any store, and requires
// it to change exactly want rows.
func Exec(t testing.TB, db *sql.DB, want int64, q string, args ...any) {
	t.Helper()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if n != want {
		t.Fatalf("%s changed %d rows, want %d", q, n, want)
	}
}

// Recv is the next value on ch; none within d fails t, naming what it
// waited for.
func Recv[T any](t testing.TB, ch <-chan T, what string, d time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %s", what, d)
		var zero T
		return zero
	}
}

// BeginStep begins run id on g with the goal and limits, and opens its
// first step.
func BeginStep(t testing.TB, g *agentrt.Gate, id, goal string, limits agentrt.Limits) (*agentrt.GateSession, *agentrt.OpenStep) {
	t.Helper()
	s, err := g.Begin(context.Background(), id, goal, limits)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	step, err := s.Step(context.Background())
	if err != nil || step == nil {
		t.Fatalf("Step: %v, %v", step, err)
	}
	return s, step
}
