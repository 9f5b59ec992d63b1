package testkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit"
)

// recTB records what a testkit function reports instead of failing the
// test, so a test can check the report.
type recTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recTB) Helper() {}

func (r *recTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recTB) Error(args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprint(args...))
	r.mu.Unlock()
}

// reported requires one report containing each of wants.
func (r *recTB) reported(t *testing.T, wants ...string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range wants {
		found := false
		for _, e := range r.errs {
			if strings.Contains(e, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no report contains %q; reports:\n%s", w, strings.Join(r.errs, "\n"))
		}
	}
}

func newTool(name string, se agentrt.SideEffect) agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: name, Description: name, SideEffect: se, Timeout: time.Minute,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
		},
	}
}

// plan is an agent that calls each tool until one of its calls is done,
// in order, then completes: whatever a crash cut off, it asks again.
func plan(tools ...string) agentrt.AgentFunc {
	return func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		for _, name := range tools {
			done := false
			for _, s := range in.Steps.All() {
				if s.Decision != nil && s.Decision.Tool == name && s.Status == agentrt.StepDone {
					done = true
				}
			}
			if !done {
				return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: name, Args: json.RawMessage(`{"text":"` + name + `"}`)}, nil
			}
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"done":true}`)}, nil
	}
}

func always(a testkit.Answer) func(agentrt.Approval) testkit.Answer {
	return func(agentrt.Approval) testkit.Answer { return a }
}

func kinds(r testkit.Result) []string {
	var out []string
	for _, a := range r.Approvals {
		out = append(out, a.Kind+":"+string(a.Status))
	}
	return out
}

// A call that took effect just before a crash is run again only when the
// operator approves the interrupted side effect, and then once, on the same
// step; rejected or left, it ran once.
func TestRun_SideEffectLostToACrashRunsAgainOnlyWhenApproved(t *testing.T) {
	sc := testkit.Scenario{Tools: []agentrt.Tool{newTool("write", agentrt.LocalMutation)}, Agent: plan("write")}
	crash := testkit.Crash{Step: 0, At: testkit.AfterToolEffect}

	sc.Operator = always(testkit.Approve)
	r := testkit.Run(t, sc, crash)
	if r.Run.Status != agentrt.RunCompleted || len(r.CallsOn(r.Steps[0].ID)) != 2 || len(r.Calls) != 2 {
		t.Fatalf("approved: run %s, %d calls on step 0, %d in all", r.Run.Status, len(r.CallsOn(r.Steps[0].ID)), len(r.Calls))
	}
	if got := kinds(r); len(got) != 1 || got[0] != agentrt.InterruptedSideEffect+":approved" {
		t.Fatalf("approved: approvals %v", got)
	}
	if r.Resumes != 2 || len(r.Crashes) != 1 {
		t.Fatalf("approved: %d resumes, %d crashes; want the crash's and the approval's", r.Resumes, len(r.Crashes))
	}

	sc.Operator = always(testkit.Reject)
	r = testkit.Run(t, sc, crash)
	if r.Run.Status != agentrt.RunCancelled || len(r.Calls) != 1 {
		t.Fatalf("rejected: run %s, %d calls", r.Run.Status, len(r.Calls))
	}

	sc.Operator = nil
	r = testkit.Run(t, sc, crash)
	if r.Run.Status != agentrt.RunWaiting || len(r.Calls) != 1 || r.Run.LeaseOwner != "" {
		t.Fatalf("left: run %s leased %q, %d calls", r.Run.Status, r.Run.LeaseOwner, len(r.Calls))
	}
}

// An approved call is cut off after the resume that started it, or after
// the resume found it allowed. The first leaves a durable start the runtime
// cannot see past, so an operator decides again, and that one approval of
// the interruption counts as the approval the tool's policy asks for the
// same request (no third approval); the second started nothing and the
// grant runs once on the next resume.
func TestRun_ApprovedRequestSurvivesACrashAfterResume(t *testing.T) {
	sc := testkit.Scenario{Tools: []agentrt.Tool{newTool("deploy", agentrt.RemoteMutation)}, Agent: plan("deploy"), Operator: always(testkit.Approve)}

	r := testkit.Run(t, sc, testkit.Crash{Step: 0, At: testkit.AfterResumed})
	if r.Run.Status != agentrt.RunCompleted || len(r.Calls) != 1 {
		t.Fatalf("after resumed: run %s, %d calls", r.Run.Status, len(r.Calls))
	}
	want := []string{"remote_mutation:approved", agentrt.InterruptedSideEffect + ":approved"}
	if got := kinds(r); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after resumed: approvals %v, want %v", got, want)
	}

	r = testkit.Run(t, sc, testkit.Crash{Step: 0, At: testkit.AfterAttachAllowed})
	if r.Run.Status != agentrt.RunCompleted || len(r.Calls) != 1 || len(r.Approvals) != 1 {
		t.Fatalf("after attach allowed: run %s, %d calls, %d approvals", r.Run.Status, len(r.Calls), len(r.Approvals))
	}
	if r.Resumes != 2 {
		t.Fatalf("after attach allowed: %d resumes, want 2", r.Resumes)
	}
}

// A second crash, just after the takeover marked the step interrupted,
// still leaves the cut-off call to the operator.
func TestRun_CrashAfterTakeoverStillWaitsForTheOperator(t *testing.T) {
	sc := testkit.Scenario{Tools: []agentrt.Tool{newTool("write", agentrt.LocalMutation)}, Agent: plan("write"), Operator: always(testkit.Approve)}
	r := testkit.Run(t, sc, testkit.Crash{Step: 0, At: testkit.AfterToolEffect}, testkit.Crash{Step: 0, At: testkit.AfterInterrupted})
	if r.Run.Status != agentrt.RunCompleted || len(r.CallsOn(r.Steps[0].ID)) != 2 {
		t.Fatalf("run %s, %d calls on step 0", r.Run.Status, len(r.CallsOn(r.Steps[0].ID)))
	}
	if got := kinds(r); len(got) != 1 || got[0] != agentrt.InterruptedSideEffect+":approved" {
		t.Fatalf("approvals %v", got)
	}
	if len(r.Crashes) != 2 || r.Resumes != 3 {
		t.Fatalf("%d crashes, %d resumes", len(r.Crashes), r.Resumes)
	}
}

// Crashes that cut off no side effect whose outcome is unknown (a deciding
// step, an allowed call not yet started, a read-only call, a recorded
// outcome) need no operator: the run goes on and completes.
func TestRun_InterruptionsThatNeedNoOperator(t *testing.T) {
	for _, c := range []struct {
		name    string
		se      agentrt.SideEffect
		crashes []testkit.Crash
		calls   int
	}{
		{"step started", agentrt.LocalMutation, []testkit.Crash{{0, testkit.AfterStepStarted}}, 1},
		{"decided", agentrt.LocalMutation, []testkit.Crash{{0, testkit.AfterDecided}}, 1},
		{"allowed", agentrt.LocalMutation, []testkit.Crash{{0, testkit.AfterAllowed}}, 1},
		{"read-only effect", agentrt.ReadOnly, []testkit.Crash{{0, testkit.AfterToolEffect}}, 2},
		{"tool finished", agentrt.LocalMutation, []testkit.Crash{{0, testkit.AfterToolFinished}}, 1},
		{"resumed after an interruption", agentrt.LocalMutation, []testkit.Crash{{0, testkit.AfterDecided}, {0, testkit.AfterResumed}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := testkit.Run(t, testkit.Scenario{Tools: []agentrt.Tool{newTool("write", c.se)}, Agent: plan("write")}, c.crashes...)
			if r.Run.Status != agentrt.RunCompleted || len(r.Approvals) != 0 || len(r.Calls) != c.calls {
				t.Fatalf("run %s, %d approvals, %d calls; want completed, none, %d", r.Run.Status, len(r.Approvals), len(r.Calls), c.calls)
			}
		})
	}
}

// Every crash point, in a Driver's loop and in a caller's gate loop, leaves
// a run that resumes to completion with the invariants kept.
func TestRun_EveryCrashPointKeepsTheInvariants(t *testing.T) {
	cases := [][]testkit.Crash{
		{{0, testkit.AfterStepStarted}},
		{{0, testkit.AfterDecided}},
		{{0, testkit.AfterAllowed}},
		{{0, testkit.AfterToolStarted}},
		{{0, testkit.AfterToolEffect}},
		{{0, testkit.AfterToolFinished}},
		{{1, testkit.AfterAttachAllowed}},
		{{1, testkit.AfterResumed}},
		{{1, testkit.AfterToolEffect}},
		{{0, testkit.AfterToolEffect}, {0, testkit.AfterInterrupted}},
	}
	covered := map[testkit.Point]bool{}
	for _, cs := range cases {
		for _, c := range cs {
			covered[c.At] = true
		}
	}
	for _, p := range testkit.Points() {
		if !covered[p] {
			t.Fatalf("no case crashes at %s", p)
		}
	}
	for _, mode := range []string{"driver", "gate"} {
		for _, cs := range cases {
			t.Run(fmt.Sprintf("%s/%v", mode, cs), func(t *testing.T) {
				sc := testkit.Scenario{
					Tools:    []agentrt.Tool{newTool("note", agentrt.LocalMutation), newTool("deploy", agentrt.RemoteMutation)},
					Operator: always(testkit.Approve),
				}
				if mode == "driver" {
					sc.Agent = plan("note", "deploy")
				} else {
					sc.Loop = testkit.GateLoop(plan("note", "deploy"))
				}
				r := testkit.Run(t, sc, cs...)
				if r.Run.Status != agentrt.RunCompleted {
					t.Fatalf("run %s %s: %s", r.Run.Status, r.Run.Reason, r.Run.ReasonDetail)
				}
				if len(r.Crashes) != len(cs) {
					t.Fatalf("reached %v, want %v", r.Crashes, cs)
				}
			})
		}
	}
}

// Run reports what it was asked to check and could not: a crash never
// reached, and a gate loop that breaks the session's contract.
func TestRun_UnreachedCrashesAndBrokenLoopsAreReported(t *testing.T) {
	tools := []agentrt.Tool{newTool("deploy", agentrt.RemoteMutation)}

	rec := &recTB{TB: t}
	testkit.Run(rec, testkit.Scenario{Tools: tools, Agent: plan(), Operator: always(testkit.Approve)}, testkit.Crash{Step: 5, At: testkit.AfterToolEffect})
	rec.reported(t, "crash tool.effect at step 5 was never reached")

	rec = &recTB{TB: t}
	testkit.Run(rec, testkit.Scenario{Tools: tools, Loop: func(ctx context.Context, s *agentrt.GateSession) error {
		return errors.New("the loop gave up")
	}})
	rec.reported(t, "the loop returned an error: the loop gave up")

	rec = &recTB{TB: t}
	testkit.Run(rec, testkit.Scenario{Tools: tools, Loop: func(ctx context.Context, s *agentrt.GateSession) error {
		_, err := s.Step(ctx)
		return err
	}})
	rec.reported(t, "the loop returned with step 0 open")

	rec = &recTB{TB: t}
	ignoring := func(ctx context.Context, s *agentrt.GateSession) error {
		if s.Current() != nil {
			return nil // ignores the approved step it was handed
		}
		return testkit.GateLoop(plan("deploy"))(ctx, s)
	}
	testkit.Run(rec, testkit.Scenario{Tools: tools, Loop: ignoring, Operator: always(testkit.Approve)})
	rec.reported(t, "the loop returned with step 0 open")
}

// Check names every broken invariant of a record, one error each, and
// finds none in a clean one.
func TestCheck_ReportsEveryBrokenInvariant(t *testing.T) {
	ev := func(seq int64, step string, typ agentrt.EventType, payload string) agentrt.Event {
		return agentrt.Event{Seq: seq, RunID: "r", StepID: step, Type: typ, Payload: json.RawMessage(payload)}
	}
	clean := testkit.Result{
		RunID:     "r",
		Run:       agentrt.Run{ID: "r", Status: agentrt.RunCompleted},
		Steps:     []agentrt.Step{{ID: "s0", Index: 0, Status: agentrt.StepDone}, {ID: "s1", Index: 1, Status: agentrt.StepDone}},
		Approvals: []agentrt.Approval{{ID: "a1", StepID: "s1", Status: agentrt.ApprovalApproved}},
		Events: []agentrt.Event{
			ev(1, "s0", agentrt.EventToolStarted, `{}`), ev(2, "s0", agentrt.EventStepInterrupted, `{}`),
			ev(3, "s0", agentrt.EventToolStarted, `{"approval_id":"a0"}`), ev(4, "s0", agentrt.EventToolFinished, `{}`),
			ev(5, "s1", agentrt.EventToolStarted, `{"approval_id":"a1"}`), ev(6, "", agentrt.EventRunFinished, `{}`),
		},
		Calls: []testkit.Call{{Tool: "w", StepID: "s0"}, {Tool: "w", StepID: "s0"}, {Tool: "d", StepID: "s1"}},
	}
	clean.Approvals = append(clean.Approvals, agentrt.Approval{ID: "a0", StepID: "s0", Status: agentrt.ApprovalApproved})
	if errs := testkit.Check(clean); len(errs) != 0 {
		t.Fatalf("a clean record broke %v", errs)
	}

	broken := testkit.Result{
		RunID: "r",
		Run:   agentrt.Run{ID: "r", Status: agentrt.RunWaiting, LeaseOwner: "ghost"},
		Steps: []agentrt.Step{{ID: "s0", Index: 0, Status: agentrt.StepDone}, {ID: "s1", Index: 1, Status: agentrt.StepExecuting},
			{ID: "s2", Index: 2, Status: agentrt.StepDeciding}},
		Approvals: []agentrt.Approval{{ID: "a1", StepID: "s1", Status: agentrt.ApprovalPending}},
		Events: []agentrt.Event{
			ev(1, "s0", agentrt.EventToolStarted, `{}`), ev(2, "s0", agentrt.EventToolFinished, `{}`),
			ev(3, "s0", agentrt.EventToolStarted, `{}`), ev(4, "s0", agentrt.EventToolFinished, `{}`),
			ev(5, "s1", agentrt.EventToolStarted, `{"approval_id":"a1"}`), ev(6, "s1", agentrt.EventStepInterrupted, `{}`),
			ev(7, "s1", agentrt.EventToolStarted, `{"approval_id":"a1"}`),
		},
		Calls: []testkit.Call{{Tool: "w", StepID: "s0"}, {Tool: "w", StepID: "s0"}, {Tool: "w", StepID: "s0"}},
	}
	errs := testkit.Check(broken)
	var text []string
	for _, e := range errs {
		text = append(text, e.Error())
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{
		"step 0 started its tool 2 times without an approval",
		"step 0's tool was called 3 times with 2 recorded tool starts",
		"approval a1 was executed 2 times",
		"names approval a1, which was not granted (pending)",
		"the tool start of step 1 (event 7) was never finished or interrupted",
		"step 1 is left executing in a WAITING_FOR_APPROVAL run",
		`still holds a lease for "ghost"`,
		"step 2 is left deciding",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Check did not report %q; it reported:\n%s", want, all)
		}
	}
	if len(errs) != 8 {
		t.Errorf("%d reports, want one per broken invariant (8):\n%s", len(errs), all)
	}
}
