package agentrt_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/enginetest"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// The helpers here are shared by the driver, approval, resume, cancel, policy
// and recheck tests: a file-backed store per test, a clock moved by hand,
// tools that count their executions, and readers of what was stored.

// testZone is the zone the fake clock reports times in. It is not UTC, as
// time.Now is usually not, so a cache that keeps the clock's zone where the
// store keeps UTC is caught.
var testZone = time.FixedZone("UTC+2", 2*60*60)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 4, 5, 6, 7, 8, testZone)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// seqIDs makes ids "<prefix>1", "<prefix>2", ... so a run reads the same on
// every execution.
func seqIDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s%d", prefix, n.Add(1)) }
}

// openStore opens a fresh SQLite file in t.TempDir().
func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// reopen opens a second store on the same file, as a second process would.
func reopen(t testing.TB, st *sqlite.Store) *sqlite.Store {
	t.Helper()
	st2, err := sqlite.Open(st.Path())
	if err != nil {
		t.Fatalf("sqlite.Open second handle: %v", err)
	}
	t.Cleanup(func() { st2.Close() })
	return st2
}

// rawDB opens a plain database/sql handle on the store's file, outside the
// store, for edits the runtime would never make.
func rawDB(t testing.TB, st *sqlite.Store) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file://"+st.Path()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// execSQL runs one statement on a raw handle and requires it to change
// exactly want rows.
func execSQL(t testing.TB, db *sql.DB, want int64, q string, args ...any) {
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

// takeSnapshot is every row of every table of st, as text.
func takeSnapshot(t testing.TB, st *sqlite.Store) map[string][]string {
	t.Helper()
	return enginetest.Snapshot(t, st.DB())
}

// requireUnchanged fails unless the store holds exactly what before held.
func requireUnchanged(t testing.TB, st *sqlite.Store, before map[string][]string, what string) {
	t.Helper()
	enginetest.RequireUnchanged(t, st.DB(), before, what)
}

// column reads one text column of one row.
func column(t testing.TB, st *sqlite.Store, q string, args ...any) string {
	t.Helper()
	var s string
	if err := st.DB().QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// countRows counts the rows a query selects.
func countRows(t testing.TB, st *sqlite.Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := st.DB().QueryRow("SELECT COUNT(*) FROM ("+q+")", args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

type E = agentrt.EventType

// Short names for the event types, so expected sequences read as a list.
const (
	runCreated    = agentrt.EventRunCreated
	runStarted    = agentrt.EventRunStarted
	runFinished   = agentrt.EventRunFinished
	runResumed    = agentrt.EventRunResumed
	stepStarted   = agentrt.EventStepStarted
	stepDecided   = agentrt.EventStepDecided
	stepPolicy    = agentrt.EventStepPolicy
	toolStarted   = agentrt.EventToolStarted
	toolFinished  = agentrt.EventToolFinished
	stepFailed    = agentrt.EventStepFailed
	stepInterrupt = agentrt.EventStepInterrupted
	apprRequested = agentrt.EventApprovalRequest
	apprDecided   = agentrt.EventApprovalDecided
	limitExceeded = agentrt.EventLimitExceeded
	loopDetected  = agentrt.EventLoopDetected
	leaseTakeover = agentrt.EventLeaseTakenOver
)

// seq concatenates event-type lists, so a test can name the shape of a step
// once and repeat it.
func seq(parts ...[]E) []E {
	var out []E
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The event shapes of the ordinary steps.
var (
	evStart    = []E{runCreated, runStarted}
	evToolStep = []E{stepStarted, stepDecided, stepPolicy, toolStarted, toolFinished}
	evPause    = []E{stepStarted, stepDecided, stepPolicy, apprRequested}
	evComplete = []E{stepStarted, stepDecided, runFinished}
)

// eventTypes lists the types of a run's stored events in order.
func eventTypes(t testing.TB, st agentrt.StoreReader, runID string) []E {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), runID)
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	out := make([]E, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// requireEvents fails unless the run's stored events have exactly the types
// want, in order.
func requireEvents(t testing.TB, st agentrt.StoreReader, runID string, want ...[]E) {
	t.Helper()
	w := seq(want...)
	got := eventTypes(t, st, runID)
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("events of run %s:\n got  %v\n want %v", runID, got, w)
	}
}

// events returns the run's stored events of one type.
func eventsOf(t testing.TB, st agentrt.StoreReader, runID string, typ E) []agentrt.Event {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), runID)
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	var out []agentrt.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// payload decodes an event's payload into a map.
func payload(t testing.TB, e agentrt.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s: %v", e.Type, err)
	}
	return m
}

func mustSteps(t testing.TB, st agentrt.StoreReader, runID string) []agentrt.Step {
	t.Helper()
	steps, err := st.ListSteps(context.Background(), runID)
	if err != nil {
		t.Fatalf("ListSteps: %v", err)
	}
	return steps
}

func mustApprovals(t testing.TB, st agentrt.StoreReader, runID string) []agentrt.Approval {
	t.Helper()
	as, err := st.ListApprovals(context.Background(), runID)
	if err != nil {
		t.Fatalf("ListApprovals: %v", err)
	}
	return as
}

func mustRun(t testing.TB, st agentrt.StoreReader, runID string) agentrt.Run {
	t.Helper()
	r, err := st.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("GetRun: %v", err)
	}
	return r
}

// requireEnded fails unless the run ended with status and reason.
func requireEnded(t testing.TB, run agentrt.Run, status agentrt.RunStatus, reason agentrt.TerminalReason) {
	t.Helper()
	if run.Status != status || run.Reason != reason {
		t.Fatalf("run %s is %s/%s (%q), want %s/%s", run.ID, run.Status, run.Reason, run.ReasonDetail, status, reason)
	}
}

// A schema with one required string and nothing else.
const pathSchema = `{"type":"object","properties":{"path":{"type":"string","maxLength":200}},"required":["path"],"additionalProperties":false}`

// counted is a tool that counts its executions and records the arguments
// each was handed.
type counted struct {
	agentrt.ToolFunc
	mu    sync.Mutex
	calls []string
}

func (c *counted) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	c.mu.Lock()
	c.calls = append(c.calls, string(call.Args))
	c.mu.Unlock()
	return c.ToolFunc.Call(ctx, call)
}

// n is how many times the tool ran.
func (c *counted) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// newTool builds a counted tool; a nil fn echoes {"ok":true}.
func newTool(name string, se agentrt.SideEffect, schema string, fn func(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error)) *counted {
	if fn == nil {
		fn = func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`), Summary: "ok"}, nil
		}
	}
	return &counted{ToolFunc: agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(schema),
			SideEffect: se, Timeout: time.Minute},
		Fn: fn,
	}}
}

// countingAgent wraps an agent and counts how often it was asked.
type countingAgent struct {
	inner agentrt.Agent
	n     atomic.Int64
}

func (a *countingAgent) Decide(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	a.n.Add(1)
	return a.inner.Decide(ctx, in)
}

func script(ds ...agentrt.Decision) *countingAgent {
	return &countingAgent{inner: &scripted.Agent{Decisions: ds}}
}

// recordingPolicy wraps a policy, counting evaluations and keeping the bytes
// of the arguments and schema each was handed.
type recordingPolicy struct {
	inner   agentrt.Policy
	mu      sync.Mutex
	args    []string
	schemas []string
}

func (p *recordingPolicy) Evaluate(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
	p.mu.Lock()
	p.args = append(p.args, string(req.Args))
	p.schemas = append(p.schemas, string(req.Spec.InputSchema))
	p.mu.Unlock()
	return p.inner.Evaluate(ctx, req, view)
}

func (p *recordingPolicy) n() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.args)
}

func (p *recordingPolicy) seen() ([]string, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.args...), append([]string(nil), p.schemas...)
}

func recording(p agentrt.Policy) *recordingPolicy { return &recordingPolicy{inner: p} }

// env is one test's store, clock and observer.
type env struct {
	t     testing.TB
	store *sqlite.Store
	clock *fakeClock
	ids   func() string

	mu    sync.Mutex
	heard []agentrt.Event
}

func newEnv(t testing.TB) *env {
	return &env{t: t, store: openStore(t), clock: newClock(), ids: seqIDs("id")}
}

func (e *env) observe(ev agentrt.Event) {
	e.mu.Lock()
	e.heard = append(e.heard, ev)
	e.mu.Unlock()
}

// config is a driver configuration on the env's store, clock and ids.
func (e *env) config(agent agentrt.Agent, policy agentrt.Policy, tools ...agentrt.Tool) agentrt.Config {
	return agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:    e.store,
			Policy:   policy,
			Tools:    tools,
			Observer: e.observe,
			Now:      e.clock.Now,
			NewID:    e.ids,
		},
		Agent: agent,
	}
}

func (e *env) driver(agent agentrt.Agent, policy agentrt.Policy, tools ...agentrt.Tool) *agentrt.Driver {
	e.t.Helper()
	return e.driverFor(e.config(agent, policy, tools...))
}

func (e *env) driverFor(cfg agentrt.Config) *agentrt.Driver {
	e.t.Helper()
	d, err := agentrt.NewDriver(cfg)
	if err != nil {
		e.t.Fatalf("NewDriver: %v", err)
	}
	return d
}

func (e *env) operator() agentrt.Operator {
	return agentrt.Operator{Store: e.store, Observer: e.observe, Now: e.clock.Now}
}

// limits is DefaultLimits changed by fn.
func limits(fn func(*agentrt.Limits)) agentrt.Limits {
	l := agentrt.DefaultLimits()
	if fn != nil {
		fn(&l)
	}
	return l
}

func call(tool, args string) agentrt.Decision { return scripted.ToolCall(tool, args, "because") }

func complete(result string) agentrt.Decision { return scripted.Complete(result) }

// policyFunc is a policy answering with a fixed decision.
func fixed(pd agentrt.PolicyDecision) agentrt.PolicyFunc {
	return func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
		return pd, nil
	}
}

// pendingApproval returns the run's only pending approval.
func pendingApproval(t testing.TB, st agentrt.StoreReader, runID string) agentrt.Approval {
	t.Helper()
	var found []agentrt.Approval
	for _, a := range mustApprovals(t, st, runID) {
		if a.Status == agentrt.ApprovalPending {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		t.Fatalf("run %s has %d pending approvals, want 1", runID, len(found))
	}
	return found[0]
}

// pausedRun starts run-1 whose one send call the default policy pauses.
func pausedRun(t *testing.T, e *env, args string) (*counted, agentrt.Approval) {
	t.Helper()
	send := newTool("send", agentrt.RemoteMutation, pathSchema, nil)
	d := e.driver(script(call("send", args)), agentrt.DefaultPolicy(), send)
	run, err := d.StartWithID(context.Background(), "run-1", "g", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
	}
	return send, pendingApproval(t, e.store, "run-1")
}
