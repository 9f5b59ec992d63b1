package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// The agent and the policy each mutate everything they are handed, and what
// they handed back after the driver took it: nothing reaches the store, the
// driver, the tool, the approval, or the other consumer.
func caseDriver_ConsumersCannotCorruptEachOther(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	schemaCopy := string(read.InputSchema)
	policySchema, _ := agentrt.PolicyJSON([]byte(kit.PathSchema))

	decisions := []agentrt.Decision{kit.Call("read", `{"path":"/a"}`), kit.Call("send", `{"path":"/b"}`), kit.Complete(`{"r":1}`)}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	scrub := func(b []byte) {
		for i := range b {
			b[i] = 'X'
		}
	}
	// compare fails when what a consumer was handed differs from the store.
	compare := func(who string, steps []agentrt.Step, approvals []agentrt.Approval) {
		fresh := kit.MustSteps(t, e.Store, "run-1")
		if len(steps) > len(fresh) || !reflect.DeepEqual(steps, nilIfEmpty(fresh[:len(steps)])) {
			fail("%s was handed steps\n %+v\nthe store holds\n %+v", who, steps, fresh)
		}
		if fa := kit.MustApprovals(t, e.Store, "run-1"); !reflect.DeepEqual(approvals, fa) {
			fail("%s was handed approvals\n %+v\nthe store holds\n %+v", who, approvals, fa)
		}
	}

	var lastArgs json.RawMessage
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		scrub(lastArgs) // the bytes it handed back last time
		compare("the agent", in.Steps.Records(), in.Approvals.Records())
		if len(in.Tools) != 2 || string(in.Tools[0].InputSchema) != schemaCopy {
			fail("the agent was handed tools %+v", in.Tools)
		}
		d := decisions[in.Steps.Len()]
		d.Args = append(json.RawMessage(nil), d.Args...)
		lastArgs = d.Args
		scribbleAll(&in.Steps, &in.Approvals)
		for i := range in.Tools {
			scrub(in.Tools[i].InputSchema)
			in.Tools[i].Name = "evil"
		}
		in.Run.Goal = "evil"
		scrub(in.Run.Result)
		return d, nil
	})
	var lastCap json.RawMessage
	policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		scrub(lastCap)
		compare("the policy", view.Steps.Records(), view.Approvals.Records())
		if string(req.Spec.InputSchema) != string(policySchema) {
			fail("the policy was handed schema %s", req.Spec.InputSchema)
		}
		want := map[string]string{"read": `{"path":"/a"}`, "send": `{"path":"/b"}`}[req.Spec.Name]
		if string(req.Args) != want {
			fail("the policy was handed args %s for %s", req.Args, req.Spec.Name)
		}
		pd, err := agentrt.DefaultPolicy().Evaluate(ctx, req, view)
		lastCap = pd.Capability
		scrub(req.Args)
		scrub(req.Spec.InputSchema)
		req.Spec.Name = "evil"
		scribbleAll(&view.Steps, &view.Approvals)
		view.Run.Goal, view.Run.Status = "evil", agentrt.RunCompleted
		return pd, err
	})
	d := e.Driver(agent, policy, read, send)

	run := startPaused(t, d, "run-1", agentrt.DefaultLimits())
	a := kit.PendingApproval(t, e.Store, "run-1")
	if err := agentrt.VerifyApproval(a); err != nil {
		t.Fatalf("stored approval: %v", err)
	}
	e.approve(t, a, "")
	run = resumeCompletes(t, d, "run-1")
	for _, p := range problems {
		t.Error(p)
	}
	if got := read.Args(); !reflect.DeepEqual(got, []string{`{"path":"/a"}`}) {
		t.Fatalf("read ran with %q", got)
	}
	if got := send.Args(); !reflect.DeepEqual(got, []string{`{"path":"/b"}`}) {
		t.Fatalf("send ran with %q", got)
	}
	if string(read.InputSchema) != schemaCopy {
		t.Fatalf("the registered schema changed: %s", read.InputSchema)
	}
	steps := kit.MustSteps(t, e.Store, "run-1")
	for i, want := range decisions {
		got := steps[i].Decision
		if got == nil || got.Kind != want.Kind || got.Tool != want.Tool || string(got.Args) != string(want.Args) || string(got.Result) != string(want.Result) {
			t.Fatalf("step %d decision stored as %+v, want %+v", i, got, want)
		}
	}
	if string(run.Result) != `{"r":1}` || run.Goal != "g" {
		t.Fatalf("run = %+v", run)
	}
	as := kit.MustApprovals(t, e.Store, "run-1")
	if len(as) != 1 || as[0].Hash != a.Hash || agentrt.VerifyApproval(as[0]) != nil {
		t.Fatalf("approvals = %+v", as)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// After every write, what the agent and the policy are handed equals a fresh
// read of the store: the run, every step and every approval, through a tool
// step, an invalid one, a denial, a tool error, a pause, a resume and the end.
func caseDriver_CachedViewEqualsReloadedView(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	tick := func() { e.Clock.Advance(1500 * time.Millisecond) } // 1.5s: active time accrues
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		tick()
		return agentrt.ToolResult{Content: json.RawMessage(`{"b":"<x>","a":1}`), Summary: "read"}, nil
	})
	broken := kit.NewTool("broken", agentrt.ReadOnly, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		tick()
		return agentrt.ToolResult{}, errors.New("no such file")
	})
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		tick()
		return agentrt.ToolResult{Content: json.RawMessage(`{"sent":true}`)}, nil
	})
	rm := kit.NewTool("rm", agentrt.Destructive, kit.PathSchema, nil)
	decisions := []agentrt.Decision{
		kit.Call("read", `{ "path" : "/a" }`),
		kit.Call("read", `{"path": 1}`),
		kit.Call("rm", `{"path":"/"}`),
		kit.Call("broken", `{"path":"/b"}`),
		kit.Call("send", `{"path":"/c"}`),
		kit.Call("read", `{"path":"/d"}`),
		kit.Complete(`{"done":true}`),
	}
	var problems []string
	check := func(who string, run agentrt.Run, steps []agentrt.Step, approvals []agentrt.Approval, current bool) {
		fresh := kit.MustSteps(t, e.Store, "run-1")
		n := len(steps)
		if current {
			// The step being decided is stored, and not handed over.
			if n != len(fresh)-1 || fresh[n].Status != agentrt.StepDeciding {
				problems = append(problems, fmt.Sprintf("%s at step %d: the store holds %d steps", who, n, len(fresh)))
				return
			}
		}
		if !reflect.DeepEqual(steps, nilIfEmpty(fresh[:n])) {
			problems = append(problems, fmt.Sprintf("%s at step %d was handed steps\n %+v\na reload gives\n %+v", who, n, steps, fresh[:n]))
		}
		if fa := kit.MustApprovals(t, e.Store, "run-1"); !reflect.DeepEqual(approvals, fa) {
			problems = append(problems, fmt.Sprintf("%s at step %d was handed approvals\n %+v\na reload gives\n %+v", who, n, approvals, fa))
		}
		// The lease's expiry is renewed by every write and by the heartbeat,
		// outside the record: the run handed over may carry an earlier
		// renewal, and nothing else may differ.
		fr := kit.MustRun(t, e.Store, "run-1")
		if run.LeaseExpiresAt.After(fr.LeaseExpiresAt) {
			problems = append(problems, fmt.Sprintf("%s at step %d was handed a lease expiry later than the stored one", who, n))
		}
		run.LeaseExpiresAt, fr.LeaseExpiresAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(run, fr) {
			problems = append(problems, fmt.Sprintf("%s at step %d was handed the run\n %+v\na reload gives\n %+v", who, n, run, fr))
		}
	}
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		check("the agent", in.Run, in.Steps.Records(), in.Approvals.Records(), true)
		tick()
		return decisions[in.Steps.Len()], nil
	})
	policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		check("the policy", view.Run, view.Steps.Records(), view.Approvals.Records(), false)
		return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
	})
	d := e.Driver(agent, policy, read, broken, send, rm)
	run := startPaused(t, d, "run-1", kit.Limits(func(l *agentrt.Limits) { l.MaxConsecutiveToolFailures = 10 }))
	if fr := kit.MustRun(t, e.Store, "run-1"); !reflect.DeepEqual(run, fr) {
		t.Errorf("Start returned\n %+v\na reload gives\n %+v", run, fr)
	}
	e.Clock.Advance(time.Hour)
	a := kit.PendingApproval(t, e.Store, "run-1")
	e.approve(t, a, "fine")
	run = resumeCompletes(t, d, "run-1")
	if fr := kit.MustRun(t, e.Store, "run-1"); !reflect.DeepEqual(run, fr) {
		t.Errorf("Resume returned\n %+v\na reload gives\n %+v", run, fr)
	}
	for _, p := range problems {
		t.Error(p)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvInvalid, kit.EvDenied, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvPause,
		[]kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvToolStep, kit.EvComplete)
}
