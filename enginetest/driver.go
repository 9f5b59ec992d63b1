package enginetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/render"
)

// A read and a completion: the run, both steps and every event are in the
// file and read the same through a second handle; the run Start returned is
// the run stored; the observer heard each event only once it was committed.
func caseDriver_CompletesAndPersists(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: json.RawMessage(`{"text":"hello"}`), Summary: "read 5 bytes"}, nil
	})
	agent := kit.Script(kit.Call("read", `{"path":"/a"}`), kit.Complete(`{"answer":"hello"}`))
	policy := kit.Recording(agentrt.DefaultPolicy())
	second := e.db.open(t)
	cfg := e.Config(agent, policy, read)
	var notYetCommitted []string
	cfg.Observer = func(ev agentrt.Event) {
		e.Observe(ev)
		// Read through another handle: an event heard before its commit
		// would not be there.
		evs, err := second.ListEvents(ctx, ev.RunID)
		if err != nil {
			notYetCommitted = append(notYetCommitted, err.Error())
			return
		}
		for _, s := range evs {
			if s.Seq == ev.Seq {
				return
			}
		}
		notYetCommitted = append(notYetCommitted, fmt.Sprintf("%s (seq %d)", ev.Type, ev.Seq))
	}
	d := e.DriverFor(cfg)

	run, err := d.StartWithID(ctx, "run-1", "say hello", agentrt.DefaultLimits())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if string(run.Result) != `{"answer":"hello"}` {
		t.Fatalf("result = %s", run.Result)
	}
	if n := agent.N.Load(); n != 2 {
		t.Fatalf("agent asked %d times, want 2", n)
	}
	if got := read.Args(); !reflect.DeepEqual(got, []string{`{"path":"/a"}`}) {
		t.Fatalf("read ran with %q, want once with {\"path\":\"/a\"}", got)
	}
	if policy.N() != 1 {
		t.Fatalf("policy asked %d times, want 1", policy.N())
	}

	stored := kit.MustRun(t, second, "run-1")
	if !reflect.DeepEqual(run, stored) {
		t.Fatalf("Start returned\n %+v\nthe file holds\n %+v", run, stored)
	}
	if stored.StepCount != 2 || stored.LeaseOwner != "" || !stored.FinishedAt.Equal(e.Clock.Now()) || stored.Goal != "say hello" {
		t.Fatalf("stored run = %+v", stored)
	}
	steps := kit.MustSteps(t, second, "run-1")
	if len(steps) != 2 {
		t.Fatalf("%d steps stored, want 2", len(steps))
	}
	s0, s1 := steps[0], steps[1]
	if s0.Status != agentrt.StepDone || s0.Decision == nil || s0.Decision.Tool != "read" || string(s0.Decision.Args) != `{"path":"/a"}` || s0.Decision.Reason != "because" {
		t.Fatalf("step 0 = %+v decision %+v", s0, s0.Decision)
	}
	if s0.Policy == nil || s0.Policy.Outcome != agentrt.Allow {
		t.Fatalf("step 0 policy = %+v", s0.Policy)
	}
	kit.RequireObs(t, s0, agentrt.ObsToolResult)
	wantHash, _ := agentrt.ContentHash([]byte(`{"text":"hello"}`))
	if string(s0.Observation.Content) != `{"text":"hello"}` || s0.Observation.Summary != "read 5 bytes" || s0.Observation.ContentHash != wantHash {
		t.Fatalf("step 0 observation = %+v", s0.Observation)
	}
	if s0.SpecHash == "" {
		t.Fatal("step 0 records no spec hash")
	}
	if _, err := second.GetSpec(ctx, s0.SpecHash); err != nil {
		t.Fatalf("GetSpec(step 0's hash): %v", err)
	}
	if s1.Status != agentrt.StepDone || s1.Decision == nil || s1.Decision.Kind != agentrt.KindComplete || s1.Observation != nil || s1.Policy != nil {
		t.Fatalf("step 1 = %+v", s1)
	}
	if n := len(kit.MustApprovals(t, second, "run-1")); n != 0 {
		t.Fatalf("%d approvals written", n)
	}
	if n := e.db.countRows(t, "SELECT * FROM model_calls"); n != 0 {
		t.Fatalf("%d model calls written", n)
	}
	kit.RequireEvents(t, second, "run-1", kit.EvStart, kit.EvToolStep, kit.EvComplete)

	if len(notYetCommitted) > 0 {
		t.Fatalf("observer heard events not yet committed: %v", notYetCommitted)
	}
	stEvents, _ := second.ListEvents(ctx, "run-1")
	if heard := e.Observed(); !reflect.DeepEqual(heard, stEvents) {
		t.Fatalf("observer heard\n %v\nthe file holds\n %v", heard, stEvents)
	}
	rep, err := second.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("VerifyEvents = %+v, %v", rep, err)
	}
}

// Arguments that do not fit the schema, an unknown tool and a nameless call
// each become an invalid_decision observation the policy never sees; the loop
// goes on and a valid call after them is judged and runs.
func caseDriver_InvalidArgumentsBecomeObservation(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	write := kit.NewTool("write", agentrt.LocalMutation, kit.PathSchema, nil)
	agent := kit.Script(
		kit.Call("write", `{"path": 7}`),
		kit.Call("write", `{"path":"/a","mode":"0777"}`),
		kit.Call("nosuch", `{"path":"/a"}`),
		kit.Call("write", `{"path":"/ok"}`),
		agentrt.Decision{Kind: agentrt.KindToolCall, Args: json.RawMessage(`{"path":"/a"}`), Reason: "no name"},
		kit.Complete(`{}`),
	)
	policy := kit.Recording(kit.Fixed(agentrt.PolicyDecision{Outcome: agentrt.Allow}))
	d := e.Driver(agent, policy, write)

	startEnds(t, d, kit.Limits(func(l *agentrt.Limits) { l.MaxConsecutiveToolFailures = 10 }), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if args, _ := policy.Seen(); !reflect.DeepEqual(args, []string{`{"path":"/ok"}`}) {
		t.Fatalf("policy saw %q, want only the valid request", args)
	}
	if got := write.Args(); !reflect.DeepEqual(got, []string{`{"path":"/ok"}`}) {
		t.Fatalf("write ran with %q", got)
	}
	steps := kit.MustSteps(t, e.Store, "run-1")
	for _, i := range []int{0, 1, 2, 4} {
		st := steps[i]
		if st.Status != agentrt.StepFailed || st.Policy != nil {
			t.Fatalf("step %d = %+v, want failed without a policy record", i, st)
		}
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
		if msg, _ := kit.ObsContent(t, st)["error"].(string); msg == "" {
			t.Fatalf("step %d observation says nothing: %s", i, st.Observation.Content)
		}
		if st.Decision == nil || st.Decision.Reason == "" || st.Decision.Kind != agentrt.KindToolCall {
			t.Fatalf("step %d decision not recorded with its reason: %+v", i, st.Decision)
		}
	}
	if string(steps[0].Decision.Args) != `{"path":7}` {
		t.Fatalf("step 0 args stored as %s", steps[0].Decision.Args)
	}
	if !strings.Contains(kit.ObsContent(t, steps[2])["error"].(string), "nosuch") {
		t.Fatalf("unknown tool not named: %s", steps[2].Observation.Content)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvToolStep, kit.EvInvalid, kit.EvComplete)
}

// runNothingActed runs agent to completion as "run-1" with write as its one
// tool, under a policy that allows everything and a limit of ten failures in
// a row, requires that the policy was never asked and write never ran, and
// returns the run's steps.
func runNothingActed(t *testing.T, e *env, agent agentrt.Agent, write *kit.Counted) []agentrt.Step {
	t.Helper()
	policy := kit.Recording(kit.Fixed(agentrt.PolicyDecision{Outcome: agentrt.Allow}))
	d := e.Driver(agent, policy, write)
	run, err := d.StartWithID(context.Background(), "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxConsecutiveToolFailures = 10 }))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if policy.N() != 0 || write.N() != 0 {
		t.Fatalf("policy asked %d times, write ran %d times; want neither", policy.N(), write.N())
	}
	return kit.MustSteps(t, e.Store, "run-1")
}

// Arguments and a result that are not JSON the runtime accepts are kept
// verbatim beside the decision, never as its arguments or result; the
// agent's reason is recorded with them and nothing is judged or run.
func caseDriver_InvalidArgumentsAreRecordedOutOfBand(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	write := kit.NewTool("write", agentrt.LocalMutation, kit.PathSchema, nil)
	notUTF8 := []byte{'{', '"', 'p', 0xff, '"', ':', '1', '}'}
	agent := kit.Script(
		kit.Call("write", `{"path": "/a"`),
		agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "write", Args: notUTF8, Reason: "bytes"},
		kit.Call("write", `{"path":"/a","path":"/etc/passwd"}`),
		agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"x":`), Reason: "half a result"},
		kit.Complete(`{}`),
	)
	steps := runNothingActed(t, e, agent, write)
	want := []struct {
		args, result string
		b64          bool
		reason       string
	}{
		{args: `{"path": "/a"`, reason: "because"},
		{args: base64.StdEncoding.EncodeToString(notUTF8), b64: true, reason: "bytes"},
		{args: `{"path":"/a","path":"/etc/passwd"}`, reason: "because"},
		{result: `{"x":`, reason: "half a result"},
	}
	for i, w := range want {
		st := steps[i]
		dec := st.Decision
		if dec == nil {
			t.Fatalf("step %d: no decision recorded", i)
		}
		if dec.Args != nil || dec.Result != nil {
			t.Fatalf("step %d stores unusable bytes as JSON: args %s result %s", i, dec.Args, dec.Result)
		}
		if dec.InvalidArgs != w.args || dec.InvalidResult != w.result || dec.InvalidBase64 != w.b64 || dec.Reason != w.reason {
			t.Fatalf("step %d decision = %+v, want %+v", i, dec, w)
		}
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
		if st.Status != agentrt.StepFailed {
			t.Fatalf("step %d is %s", i, st.Status)
		}
		// The column itself has no args or result member.
		raw := e.db.column(t, "SELECT decision_json FROM steps WHERE id = ?", st.ID)
		var cols map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &cols); err != nil {
			t.Fatalf("step %d decision_json %q: %v", i, raw, err)
		}
		if _, ok := cols["args"]; ok {
			t.Fatalf("step %d decision_json has args: %s", i, raw)
		}
		if _, ok := cols["result"]; ok {
			t.Fatalf("step %d decision_json has a result: %s", i, raw)
		}
	}
	for _, ev := range kit.EventsOf(t, e.Store, "run-1", kit.StepDecided)[:4] {
		p := kit.Payload(t, ev)
		if _, ok := p["args"]; ok {
			t.Fatalf("step.decided carries args: %s", ev.Payload)
		}
		if _, ok := p["invalid_args"]; !ok {
			if _, ok := p["invalid_result"]; !ok {
				t.Fatalf("step.decided carries neither invalid_args nor invalid_result: %s", ev.Payload)
			}
		}
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvComplete)
}

// A reply cut off by its output cap, a refused reply and a reply with no
// tool use become the deliberately invalid kinds; neither they nor an
// unknown kind is acted on, even when one carries a tool and arguments that
// would pass.
func caseDriver_PseudoDecisionKindsAreInvalid(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	write := kit.NewTool("write", agentrt.LocalMutation, kit.PathSchema, nil)
	cut := render.Decide(agentrt.ModelResponse{Text: "I will write", StopReason: agentrt.StopMaxTokens,
		ToolUses: []agentrt.ToolUse{{ID: "t1", Name: "write", Args: json.RawMessage(`{"path":"/a"}`)}}})
	if cut.Kind != agentrt.KindTruncated || cut.Tool != "" || cut.Args != nil {
		t.Fatalf("render.Decide of a cut-off reply = %+v", cut)
	}
	refused := render.Decide(agentrt.ModelResponse{Text: "I won't", StopReason: agentrt.StopRefusal,
		ToolUses: []agentrt.ToolUse{{ID: "t2", Name: "write", Args: json.RawMessage(`{"path":"/a"}`)}}})
	if refused.Kind != agentrt.KindRefused || refused.Kind.Actionable() || refused.Tool != "" || refused.Args != nil {
		t.Fatalf("render.Decide of a refused reply = %+v", refused)
	}
	none := render.Decide(agentrt.ModelResponse{Text: "shall I?", StopReason: agentrt.StopEndTurn})
	if none.Kind != agentrt.KindNoToolCall {
		t.Fatalf("render.Decide of a tool-less reply = %+v", none)
	}
	valid := json.RawMessage(`{"path":"/a"}`)
	agent := kit.Script(
		cut,
		refused,
		none,
		agentrt.Decision{Kind: agentrt.KindTruncated, Tool: "write", Args: valid},
		agentrt.Decision{Kind: agentrt.KindRefused, Tool: "write", Args: valid},
		agentrt.Decision{Kind: agentrt.KindNoToolCall, Tool: "write", Args: valid},
		agentrt.Decision{Kind: "shell", Tool: "write", Args: valid},
		kit.Complete(`{}`),
	)
	steps := runNothingActed(t, e, agent, write)
	for i, kind := range []agentrt.DecisionKind{agentrt.KindTruncated, agentrt.KindRefused, agentrt.KindNoToolCall,
		agentrt.KindTruncated, agentrt.KindRefused, agentrt.KindNoToolCall, "shell"} {
		st := steps[i]
		if st.Decision == nil || st.Decision.Kind != kind || st.Status != agentrt.StepFailed || st.Policy != nil {
			t.Fatalf("step %d = %+v decision %+v, want a failed %s", i, st, st.Decision, kind)
		}
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
	}
	if steps[0].Decision.Reason != "I will write" {
		t.Fatalf("cut-off reply's text not kept as its reason: %+v", steps[0].Decision)
	}
	if steps[1].Decision.Reason != "I won't" || !strings.Contains(steps[1].Observation.Summary, "refused") {
		t.Fatalf("refused reply's text not kept as its reason, or its observation does not say refused: %+v %+v", steps[1].Decision, steps[1].Observation)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, kit.EvComplete)
}

// A destructive request under the default policy is denied: the tool does not
// run, the denial is the step's observation, and the loop goes on.
func caseDriver_PolicyDenyIsObservation(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	rm := kit.NewTool("rm", agentrt.Destructive, kit.PathSchema, nil)
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
	var sawDenial bool
	inner := kit.Script(kit.Call("rm", `{"path":"/"}`), kit.Call("read", `{"path":"/a"}`), kit.Complete(`{}`))
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 1 && in.Steps.At(0).Observation != nil && in.Steps.At(0).Observation.Kind == agentrt.ObsPolicyDenied {
			sawDenial = true
		}
		return inner.Decide(ctx, in)
	})
	d := e.Driver(agent, agentrt.DefaultPolicy(), rm, read)

	startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if rm.N() != 0 {
		t.Fatalf("rm ran %d times", rm.N())
	}
	if read.N() != 1 {
		t.Fatalf("read ran %d times, want 1", read.N())
	}
	if !sawDenial {
		t.Fatal("the agent was not shown the denial")
	}
	st := kit.MustSteps(t, e.Store, "run-1")[0]
	if st.Status != agentrt.StepFailed || st.Policy == nil || st.Policy.Outcome != agentrt.Deny {
		t.Fatalf("step 0 = %+v policy %+v", st, st.Policy)
	}
	kit.RequireObs(t, st, agentrt.ObsPolicyDenied)
	if c := kit.ObsContent(t, st); c["tool"] != "rm" || c["reason"] != st.Policy.Reason {
		t.Fatalf("denial content = %v", c)
	}
	pe := kit.EventsOf(t, e.Store, "run-1", kit.StepPolicy)[0]
	if kit.Payload(t, pe)["outcome"] != "deny" || pe.StepID != st.ID {
		t.Fatalf("step.policy = %s", pe.Payload)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvDenied, kit.EvToolStep, kit.EvComplete)
}

// An abort ends the run at once: the tool does not run and the agent is not
// asked again.
func caseDriver_PolicyAbortEndsRun(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	rm := kit.NewTool("rm", agentrt.Destructive, kit.PathSchema, nil)
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
	agent := kit.Script(kit.Call("read", `{"path":"/a"}`), kit.Call("rm", `{"path":"/"}`), kit.Complete(`{}`))
	policy := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		if req.Spec.Name == "rm" {
			return agentrt.PolicyDecision{Outcome: agentrt.Abort, Reason: "nobody removes /"}, nil
		}
		return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
	})
	d := e.Driver(agent, policy, rm, read)

	run := startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonPolicyAbort)
	if run.ReasonDetail != "nobody removes /" {
		t.Fatalf("detail = %q", run.ReasonDetail)
	}
	if rm.N() != 0 || read.N() != 1 {
		t.Fatalf("rm ran %d, read %d times", rm.N(), read.N())
	}
	if n := agent.N.Load(); n != 2 {
		t.Fatalf("agent asked %d times, want 2", n)
	}
	steps := kit.MustSteps(t, e.Store, "run-1")
	if len(steps) != 2 || steps[1].Status != agentrt.StepFailed || steps[1].Policy == nil || steps[1].Policy.Outcome != agentrt.Abort {
		t.Fatalf("steps = %+v", steps)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepPolicy, kit.StepFailed, kit.RunFinished})
}

// The step limit ends the run before a step past it starts: no further step,
// no further tool call.
func caseDriver_StepLimit(t *testing.T, bk *Backend) {
	e := newEnv(t, bk)
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
	agent := &kit.CountingAgent{Inner: agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		return kit.Call("read", fmt.Sprintf(`{"path":"/%d"}`, in.Steps.Len())), nil
	})}
	d := e.Driver(agent, agentrt.DefaultPolicy(), read)

	run := startEnds(t, d, kit.Limits(func(l *agentrt.Limits) { l.MaxSteps = 3 }), agentrt.RunFailed, agentrt.ReasonLimitSteps)
	if read.N() != 3 || agent.N.Load() != 3 || run.StepCount != 3 {
		t.Fatalf("read ran %d times, agent asked %d times, %d steps; want 3 each", read.N(), agent.N.Load(), run.StepCount)
	}
	if n := len(kit.MustSteps(t, e.Store, "run-1")); n != 3 {
		t.Fatalf("%d steps stored", n)
	}
	le := kit.EventsOf(t, e.Store, "run-1", kit.LimitExceeded)
	if len(le) != 1 || kit.Payload(t, le[0])["reason"] != string(agentrt.ReasonLimitSteps) {
		t.Fatalf("limit.exceeded = %v", le)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvToolStep, kit.EvToolStep, []kit.E{kit.LimitExceeded, kit.RunFinished})
}

// The same call getting the same result LoopThreshold times ends the run as
// loop_detected; a call whose result changes is progress and goes on.
func caseDriver_IdenticalCallAndResultStops(t *testing.T, bk *Backend) {
	t.Run("same result", func(t *testing.T) {
		e := newEnv(t, bk)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		agent := &kit.CountingAgent{Inner: agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			return kit.Call("read", `{"path":"/a"}`), nil
		})}
		d := e.Driver(agent, agentrt.DefaultPolicy(), read)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonLoopDetected)
		if read.N() != 3 || agent.N.Load() != 3 {
			t.Fatalf("read ran %d times, agent asked %d; want 3", read.N(), agent.N.Load())
		}
		ld := kit.EventsOf(t, e.Store, "run-1", kit.LoopDetected)
		argsHash, _ := agentrt.ContentHash([]byte(`{"path":"/a"}`))
		obsHash, _ := agentrt.ContentHash([]byte(`{"ok":true}`))
		if len(ld) != 1 {
			t.Fatalf("%d loop.detected events", len(ld))
		}
		if p := kit.Payload(t, ld[0]); p["repeats"] != float64(3) || p["tool"] != "read" || p["args_hash"] != argsHash || p["observation_hash"] != obsHash {
			t.Fatalf("loop.detected = %s", ld[0].Payload)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvToolStep, kit.EvToolStep, []kit.E{kit.LoopDetected, kit.RunFinished})
	})
	t.Run("changing result", func(t *testing.T) {
		e := newEnv(t, bk)
		var n int
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			n++
			return agentrt.ToolResult{Content: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}, nil
		})
		agent := agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			return kit.Call("read", `{"path":"/a"}`), nil
		})
		d := e.Driver(agent, agentrt.DefaultPolicy(), read)
		startEnds(t, d, kit.Limits(func(l *agentrt.Limits) { l.MaxSteps = 5 }), agentrt.RunFailed, agentrt.ReasonLimitSteps)
		if read.N() != 5 {
			t.Fatalf("read ran %d times, want 5", read.N())
		}
		if ld := kit.EventsOf(t, e.Store, "run-1", kit.LoopDetected); len(ld) != 0 {
			t.Fatalf("a changing result was taken for a loop: %v", ld)
		}
	})
}
