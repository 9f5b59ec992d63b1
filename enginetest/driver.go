package enginetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

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

// stateWatch is a store that reads the run and its last step after every
// commit, so a test can see which commit changed what.
type stateWatch struct {
	agentrt.Store
	t      testing.TB
	runID  string
	states []watchState
}

type watchState struct {
	run      agentrt.RunStatus
	lastIdx  int
	lastStep agentrt.StepStatus
	events   []kit.E
}

func (w *stateWatch) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	evs, err := w.Store.Update(ctx, fn)
	if err != nil {
		return evs, err
	}
	st := watchState{lastIdx: -1}
	if r, err := w.Store.GetRun(ctx, w.runID); err == nil {
		st.run = r.Status
	}
	if steps, err := w.Store.ListSteps(ctx, w.runID); err == nil && len(steps) > 0 {
		st.lastIdx, st.lastStep = steps[len(steps)-1].Index, steps[len(steps)-1].Status
	}
	for _, e := range evs {
		st.events = append(st.events, e.Type)
	}
	w.states = append(w.states, st)
	return evs, nil
}

// A terminal tool's success, a tool's abort, a completion and a policy abort
// each end their step and the run in one commit: no commit shows the step
// ended with the run still going, and the tool's outcome is in that commit.
func caseDriver_TerminalToolCommitsWithTheRun(t *testing.T, bk *Backend) {
	ctx := context.Background()
	cases := []struct {
		name       string
		tool       func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error)
		terminal   bool
		decision   agentrt.Decision
		policy     agentrt.PolicyOutcome
		status     agentrt.RunStatus
		reason     agentrt.TerminalReason
		lastStep   agentrt.StepStatus
		ending     []kit.E // the events of the commit that ends the run
		runs       int
		wantResult string
	}{
		{name: "terminal tool", terminal: true,
			tool: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
				return agentrt.ToolResult{Content: json.RawMessage(`{"done":true}`), Summary: "done"}, nil
			},
			decision: kit.Call("finish", `{"path":"/a"}`), policy: agentrt.Allow,
			status: agentrt.RunCompleted, reason: agentrt.ReasonGoalCompleted, lastStep: agentrt.StepDone,
			ending: []kit.E{kit.ToolFinished, kit.RunFinished}, runs: 1, wantResult: `{"done":true}`},
		{name: "tool abort",
			tool: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
				return agentrt.ToolResult{}, &agentrt.AbortRunError{Detail: "disk on fire"}
			},
			decision: kit.Call("finish", `{"path":"/a"}`), policy: agentrt.Allow,
			status: agentrt.RunFailed, reason: agentrt.ReasonToolAbort, lastStep: agentrt.StepFailed,
			ending: []kit.E{kit.ToolFinished, kit.StepFailed, kit.RunFinished}, runs: 1},
		{name: "complete", decision: kit.Complete(`{"r":1}`), policy: agentrt.Allow,
			status: agentrt.RunCompleted, reason: agentrt.ReasonGoalCompleted, lastStep: agentrt.StepDone,
			ending: []kit.E{kit.RunFinished}, wantResult: `{"r":1}`},
		{name: "policy abort", decision: kit.Call("finish", `{"path":"/a"}`), policy: agentrt.Abort,
			status: agentrt.RunFailed, reason: agentrt.ReasonPolicyAbort, lastStep: agentrt.StepFailed,
			ending: []kit.E{kit.StepPolicy, kit.StepFailed, kit.RunFinished}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			fin := kit.NewTool("finish", agentrt.ReadOnly, kit.PathSchema, c.tool)
			fin.Terminal = c.terminal
			read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
			w := &stateWatch{Store: e.Store, t: t, runID: "run-1"}
			cfg := e.Config(kit.Script(kit.Call("read", `{"path":"/r"}`), c.decision), kit.Fixed(agentrt.PolicyDecision{Outcome: c.policy, Reason: "r"}), fin, read)
			cfg.Policy = agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
				if req.Spec.Name == "read" {
					return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
				}
				return agentrt.PolicyDecision{Outcome: c.policy, Reason: "r"}, nil
			})
			cfg.Store = w
			d := e.DriverFor(cfg)
			run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			kit.RequireEnded(t, run, c.status, c.reason)
			if c.wantResult != "" && string(run.Result) != c.wantResult {
				t.Fatalf("result = %s, want %s", run.Result, c.wantResult)
			}
			if fin.N() != c.runs {
				t.Fatalf("finish ran %d times, want %d", fin.N(), c.runs)
			}
			end := -1
			for i, s := range w.states {
				if s.run.Terminal() {
					end = i
					break
				}
			}
			if end < 1 {
				t.Fatalf("no commit ended the run after another: %+v", w.states)
			}
			before, at := w.states[end-1], w.states[end]
			if before.run != agentrt.RunRunning || before.lastIdx != 1 || !before.lastStep.InFlight() {
				t.Fatalf("the commit before the end shows run %s, step %d %s: the step ended apart from the run", before.run, before.lastIdx, before.lastStep)
			}
			if at.lastIdx != 1 || at.lastStep != c.lastStep {
				t.Fatalf("the ending commit left step %d %s, want step 1 %s", at.lastIdx, at.lastStep, c.lastStep)
			}
			if !reflect.DeepEqual(at.events, c.ending) {
				t.Fatalf("the ending commit wrote %v, want %v", at.events, c.ending)
			}
			if end != len(w.states)-1 {
				t.Fatalf("commits after the end: %+v", w.states[end+1:])
			}
		})
	}
}

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

// JSON nested deeper than 256 levels is refused where it enters: arguments
// and a result as invalid decisions kept out of band, tool content as a tool
// error keeping the bytes, a capability or presentation by failing the run.
// Nothing deep is stored as JSON, hashed, judged or executed.
func caseDriver_DeepJSONIsRefusedWhereItEnters(t *testing.T, bk *Backend) {
	const anySchema = `{"type":"object"}`
	deepArgs := `{"a":` + kit.Nested(256, "1") + `}`  // 257 levels
	limitArgs := `{"a":` + kit.Nested(255, "1") + `}` // 256 levels: accepted
	deep := kit.Nested(257, "1")

	t.Run("arguments", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("any", agentrt.ReadOnly, anySchema, nil)
		policy := kit.Recording(agentrt.DefaultPolicy())
		d := e.Driver(kit.Script(kit.Call("any", deepArgs), kit.Call("any", limitArgs), kit.Complete(`{}`)), policy, tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if args, _ := policy.Seen(); !reflect.DeepEqual(args, []string{limitArgs}) {
			t.Fatalf("policy saw %d requests, want only the one 256 deep", len(args))
		}
		if got := tool.Args(); !reflect.DeepEqual(got, []string{limitArgs}) {
			t.Fatalf("tool ran %d times, want only with the request 256 deep", len(got))
		}
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
		if st.Decision.Args != nil || st.Decision.InvalidArgs != deepArgs {
			t.Fatal("deep arguments not kept out of band")
		}
		if !strings.Contains(kit.ObsContent(t, st)["error"].(string), "256") {
			t.Fatalf("refusal does not say why: %s", st.Observation.Content)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvToolStep, kit.EvComplete)
	})
	t.Run("result", func(t *testing.T) {
		e := newEnv(t, bk)
		d := e.Driver(kit.Script(kit.Complete(deep), kit.Complete(`{"ok":1}`)), agentrt.DefaultPolicy())
		run := startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if string(run.Result) != `{"ok":1}` {
			t.Fatalf("result = %.40s", run.Result)
		}
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsInvalidDecision)
		if st.Decision.Result != nil || st.Decision.InvalidResult != deep {
			t.Fatal("deep result not kept out of band")
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvComplete)
	})
	t.Run("tool content", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("any", agentrt.ReadOnly, anySchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(deep)}, nil
		})
		d := e.Driver(kit.Script(kit.Call("any", `{}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsToolError)
		if c := kit.ObsContent(t, st); c["content"] != deep || c["failure"] != "invalid_content" {
			t.Fatalf("tool error does not keep the bytes: %.200s", st.Observation.Content)
		}
		if st.Status != agentrt.StepFailed {
			t.Fatalf("step is %s", st.Status)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvComplete)
	})
	for _, field := range []string{"capability", "presentation"} {
		t.Run(field, func(t *testing.T) {
			e := newEnv(t, bk)
			tool := kit.NewTool("send", agentrt.RemoteMutation, anySchema, nil)
			pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "k", Reason: "r",
				Capability: json.RawMessage(`{}`), Presentation: json.RawMessage(`{}`)}
			if field == "capability" {
				pd.Capability = json.RawMessage(deep)
			} else {
				pd.Presentation = json.RawMessage(deep)
			}
			d := e.Driver(kit.Script(kit.Call("send", `{}`), kit.Complete(`{}`)), kit.Fixed(pd), tool)
			run := startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonInternalError)
			if !strings.Contains(run.ReasonDetail, field) {
				t.Fatalf("detail %q does not name the %s", run.ReasonDetail, field)
			}
			if tool.N() != 0 {
				t.Fatal("tool ran")
			}
			if n := e.db.countRows(t, "SELECT * FROM approvals"); n != 0 {
				t.Fatalf("%d approvals written", n)
			}
			pe := kit.EventsOf(t, e.Store, "run-1", kit.StepPolicy)
			if len(pe) != 1 || strings.Contains(string(pe[0].Payload), "[[[[") {
				t.Fatalf("step.policy stores the deep value: %.200s", pe[0].Payload)
			}
			st := kit.MustSteps(t, e.Store, "run-1")[0]
			if st.Policy == nil || st.Policy.Capability != nil || st.Policy.Presentation != nil {
				t.Fatalf("step policy stores the deep value: %+v", st.Policy)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepPolicy, kit.StepFailed, kit.RunFinished})
		})
	}
	t.Run("tool schema", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("any", agentrt.ReadOnly, `{"type":"object","default":`+deep+`}`, nil)
		if _, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool)); !errors.Is(err, agentrt.ErrInvalidJSON) {
			t.Fatalf("NewDriver with a deep schema = %v, want ErrInvalidJSON", err)
		}
	})
}

// Numbers whose literal or exponent is past the bound are refused where they
// enter, against a schema that bounds them, without a panic: arguments and a
// result as invalid decisions, tool content as a tool error, a capability by
// failing the run, and a tool schema at registration.
func caseDriver_HugeNumbersAreRefusedWhereTheyEnter(t *testing.T, bk *Backend) {
	const numSchema = `{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":1e9,"multipleOf":0.5}},"additionalProperties":false}`
	long := "1" + strings.Repeat("0", 10000) // 10,001 characters
	refused := []string{
		`{"n":1e-10000000}`,
		`{"n":0.1e-9223372036854775808}`,
		`{"n":1e10001}`,
		`{"n":` + long + `}`,
		`{"n":0.` + strings.Repeat("0", 10001) + `1}`,
	}
	t.Run("arguments and result", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("num", agentrt.ReadOnly, numSchema, nil)
		var ds []agentrt.Decision
		for _, a := range refused {
			ds = append(ds, kit.Call("num", a))
		}
		ds = append(ds, kit.Complete(`{"n":1e20000}`), kit.Call("num", `{"n":1.5}`), kit.Complete(`{}`))
		policy := kit.Recording(agentrt.DefaultPolicy())
		d := e.Driver(kit.Script(ds...), policy, tool)
		startEnds(t, d, kit.Limits(func(l *agentrt.Limits) { l.MaxConsecutiveToolFailures = 10 }), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		if args, _ := policy.Seen(); !reflect.DeepEqual(args, []string{`{"n":1.5}`}) {
			t.Fatalf("policy saw %q", args)
		}
		if got := tool.Args(); !reflect.DeepEqual(got, []string{`{"n":1.5}`}) {
			t.Fatalf("tool ran with %q", got)
		}
		steps := kit.MustSteps(t, e.Store, "run-1")
		for i := 0; i <= len(refused); i++ {
			kit.RequireObs(t, steps[i], agentrt.ObsInvalidDecision)
			if dec := steps[i].Decision; dec.Args != nil || dec.Result != nil {
				t.Fatalf("step %d stores the number as JSON", i)
			}
		}
		var want [][]kit.E
		want = append(want, kit.EvStart)
		for i := 0; i <= len(refused); i++ {
			want = append(want, kit.EvInvalid)
		}
		want = append(want, kit.EvToolStep, kit.EvComplete)
		kit.RequireEvents(t, e.Store, "run-1", want...)
	})
	t.Run("tool content", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("num", agentrt.ReadOnly, numSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"n":1e-100000}`)}, nil
		})
		d := e.Driver(kit.Script(kit.Call("num", `{"n":1}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsToolError)
		if c := kit.ObsContent(t, st); c["content"] != `{"n":1e-100000}` {
			t.Fatalf("tool error does not keep the bytes: %s", st.Observation.Content)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvComplete)
	})
	t.Run("capability", func(t *testing.T) {
		e := newEnv(t, bk)
		tool := kit.NewTool("num", agentrt.RemoteMutation, numSchema, nil)
		pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "k", Capability: json.RawMessage(`{"n":1e100000}`)}
		d := e.Driver(kit.Script(kit.Call("num", `{"n":1}`)), kit.Fixed(pd), tool)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonInternalError)
		if tool.N() != 0 || e.db.countRows(t, "SELECT * FROM approvals") != 0 {
			t.Fatal("tool ran or an approval was written")
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepPolicy, kit.StepFailed, kit.RunFinished})
	})
	t.Run("tool schema", func(t *testing.T) {
		for _, s := range []string{`{"type":"number","minimum":1e100000}`, `{"type":"number","maximum":` + long + `}`} {
			spec := agentrt.ToolSpec{Name: "num", InputSchema: json.RawMessage(s), SideEffect: agentrt.ReadOnly, Timeout: 1e9}
			if _, err := agentrt.CompileTool(spec); !errors.Is(err, agentrt.ErrInvalidJSON) {
				t.Fatalf("CompileTool(%.40s) = %v, want ErrInvalidJSON", s, err)
			}
			e := newEnv(t, bk)
			tool := kit.NewTool("num", agentrt.ReadOnly, s, nil)
			if _, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool)); !errors.Is(err, agentrt.ErrInvalidJSON) {
				t.Fatalf("NewDriver(%.40s) = %v, want ErrInvalidJSON", s, err)
			}
		}
	})
}

// A caller that gives up while a tool runs still gets the tool's outcome
// recorded: a success as a success, a failure caused by the cancellation as
// an interruption whose outcome is unknown. No further step starts.
func caseDriver_CancelledContextAfterToolKeepsTheObservation(t *testing.T, bk *Backend) {
	for _, c := range []struct {
		name   string
		fail   bool
		kind   agentrt.ObservationKind
		status agentrt.StepStatus
		events []kit.E
	}{
		{"tool succeeds", false, agentrt.ObsToolResult, agentrt.StepDone, nil},
		{"tool fails from the cancellation", true, agentrt.ObsInterrupted, agentrt.StepFailed, []kit.E{kit.StepFailed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			write := kit.NewTool("write", agentrt.LocalMutation, kit.PathSchema, func(tctx context.Context, _ agentrt.ToolCall) (agentrt.ToolResult, error) {
				cancel()
				<-tctx.Done()
				if c.fail {
					return agentrt.ToolResult{}, tctx.Err()
				}
				return agentrt.ToolResult{Content: json.RawMessage(`{"wrote":true}`)}, nil
			})
			agent := kit.Script(kit.Call("write", `{"path":"/a"}`), kit.Complete(`{}`))
			d := e.Driver(agent, agentrt.DefaultPolicy(), write)
			run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Start = %v, want context.Canceled", err)
			}
			if write.N() != 1 || agent.N.Load() != 1 {
				t.Fatalf("write ran %d times, agent asked %d; want once each", write.N(), agent.N.Load())
			}
			stored := kit.MustRun(t, e.Store, "run-1")
			if stored.Status != agentrt.RunRunning || run.Status != agentrt.RunRunning {
				t.Fatalf("run is %s (returned %s), want RUNNING for a later Resume", stored.Status, run.Status)
			}
			steps := kit.MustSteps(t, e.Store, "run-1")
			if len(steps) != 1 || steps[0].Status != c.status {
				t.Fatalf("steps = %+v", steps)
			}
			kit.RequireObs(t, steps[0], c.kind)
			if !c.fail && string(steps[0].Observation.Content) != `{"wrote":true}` {
				t.Fatalf("observation = %s", steps[0].Observation.Content)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, c.events)
		})
	}
}

// A schema that refers outside itself, by $ref, $id or $schema, to a URL, a
// file or a relative document, refuses the tool at NewDriver; nothing is
// fetched. References inside the schema and to the standard metaschemas pass.
func caseNewDriver_SchemaReferencesOutsideItselfAreRefused(t *testing.T, bk *Backend) {
	var hits sync.Map
	var hitCount int
	var mu sync.Mutex
	srv := kit.NewCountingServer(t, func(path string) {
		mu.Lock()
		hitCount++
		mu.Unlock()
		hits.Store(path, true)
	})
	e := newEnv(t, bk)
	before := e.db.snapshot(t)
	refused := []struct{ schema, names string }{
		{`{"$ref":"` + srv + `/s.json"}`, srv + "/s.json"},
		{`{"type":"object","properties":{"a":{"$ref":"` + srv + `/s.json#/x"}}}`, srv + "/s.json"},
		{`{"$id":"` + srv + `/root.json","type":"object"}`, srv + "/root.json"},
		{`{"$schema":"` + srv + `/meta","type":"object"}`, srv + "/meta"},
		{`{"$ref":"file:///etc/passwd"}`, "file:///etc/passwd"},
		{`{"$ref":"other.json"}`, "other.json"},
		{`{"$defs":{"x":{"$id":"` + srv + `/x.json"}},"type":"object"}`, srv + "/x.json"},
		{`{"type":"object","items":{"$ref":"/etc/passwd"}}`, "/etc/passwd"},
	}
	for _, r := range refused {
		tool := kit.NewTool("t", agentrt.ReadOnly, r.schema, nil)
		_, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool))
		if err == nil {
			t.Fatalf("NewDriver accepted %s", r.schema)
		}
		if !strings.Contains(err.Error(), r.names) {
			t.Fatalf("NewDriver(%s) = %v; the error does not name %s", r.schema, err, r.names)
		}
		if _, err := agentrt.CompileTool(tool.ToolSpec); err == nil {
			t.Fatalf("CompileTool accepted %s", r.schema)
		}
	}
	for _, ok := range []string{
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string"}}}`,
	} {
		tool := kit.NewTool("t", agentrt.ReadOnly, ok, nil)
		if _, err := agentrt.NewDriver(e.Config(kit.Script(), agentrt.DefaultPolicy(), tool)); err != nil {
			t.Fatalf("NewDriver refused a self-contained schema %s: %v", ok, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hitCount != 0 {
		var paths []string
		hits.Range(func(k, _ any) bool { paths = append(paths, k.(string)); return true })
		t.Fatalf("the server was asked for %v", paths)
	}
	e.db.requireUnchanged(t, before, "registering tools")
}

// Consecutive failures, active time and elapsed time each end the run with
// their reason before the next step starts; time spent waiting for an
// approval is not active time, and elapsed time counts it.
func caseDriver_LimitsEndTheRunBeforeTheNextStep(t *testing.T, bk *Backend) {
	ctx := context.Background()
	slowTool := func(e *env, name string, se agentrt.SideEffect) *kit.Counted {
		return kit.NewTool(name, se, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			e.Clock.Advance(4 * time.Second)
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
		})
	}
	byStep := func(ds ...agentrt.Decision) *kit.CountingAgent {
		return &kit.CountingAgent{Inner: agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if in.Steps.Len() < len(ds) {
				return ds[in.Steps.Len()], nil
			}
			return kit.Call("read", fmt.Sprintf(`{"path":"/%d"}`, in.Steps.Len())), nil
		})}
	}
	t.Run("consecutive failures", func(t *testing.T) {
		e := newEnv(t, bk)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		agent := &kit.CountingAgent{Inner: agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			return kit.Call("read", `{"path":1}`), nil
		})}
		run, err := e.Driver(agent, agentrt.DefaultPolicy(), read).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonRepeatedToolFailures)
		if agent.N.Load() != 3 {
			t.Fatalf("agent asked %d times, want 3", agent.N.Load())
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvInvalid, kit.EvInvalid, kit.EvInvalid, []kit.E{kit.LimitExceeded, kit.RunFinished})
	})
	t.Run("active time", func(t *testing.T) {
		e := newEnv(t, bk)
		read := slowTool(e, "read", agentrt.ReadOnly)
		agent := byStep()
		run, err := e.Driver(agent, agentrt.DefaultPolicy(), read).StartWithID(ctx, "run-1", "g",
			kit.Limits(func(l *agentrt.Limits) { l.MaxActiveTime = 10 * time.Second }))
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitActiveTime)
		if read.N() != 3 || run.ActiveTime != 12*time.Second {
			t.Fatalf("read ran %d times, active %s; want 3 and 12s", read.N(), run.ActiveTime)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, kit.EvToolStep, kit.EvToolStep, []kit.E{kit.LimitExceeded, kit.RunFinished})
	})
	t.Run("approval wait is not active time", func(t *testing.T) {
		e := newEnv(t, bk)
		read := slowTool(e, "read", agentrt.ReadOnly)
		send := slowTool(e, "send", agentrt.RemoteMutation)
		agent := byStep(kit.Call("send", `{"path":"/s"}`), kit.Call("read", `{"path":"/r"}`), kit.Complete(`{}`))
		d := e.Driver(agent, agentrt.DefaultPolicy(), read, send)
		run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxActiveTime = 10 * time.Second }))
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v", run.Status, err)
		}
		e.Clock.Advance(time.Hour)
		a := kit.PendingApproval(t, e.Store, "run-1")
		e.approve(t, a, "")
		run = resumeCompletes(t, d, "run-1")
		if run.ActiveTime != 8*time.Second {
			t.Fatalf("active time %s, want 8s: the hour waiting was counted", run.ActiveTime)
		}
	})
	t.Run("elapsed time counts the wait", func(t *testing.T) {
		e := newEnv(t, bk)
		send := slowTool(e, "send", agentrt.RemoteMutation)
		agent := byStep(kit.Call("send", `{"path":"/s"}`), kit.Complete(`{}`))
		d := e.Driver(agent, agentrt.DefaultPolicy(), send)
		run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.MaxElapsedTime = time.Hour }))
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v", run.Status, err)
		}
		e.Clock.Advance(2 * time.Hour)
		a := kit.PendingApproval(t, e.Store, "run-1")
		e.approve(t, a, "")
		run, err = d.Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitElapsedTime)
		if send.N() != 1 || agent.N.Load() != 1 {
			t.Fatalf("send ran %d times, agent asked %d; the approved step runs, no step starts after it", send.N(), agent.N.Load())
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished, kit.LimitExceeded, kit.RunFinished})
	})
}

// A panic in a tool is that tool's error and the loop goes on; a panic in the
// policy fails the run as internal_error and one in the agent as
// agent_error. None takes the process down or runs anything further.
func caseDriver_PanicsAreErrorsOfTheirOwner(t *testing.T, bk *Backend) {
	ctx := context.Background()
	t.Run("tool", func(t *testing.T) {
		e := newEnv(t, bk)
		bad := kit.NewTool("bad", agentrt.ReadOnly, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			panic("tool bug")
		})
		run, err := e.Driver(kit.Script(kit.Call("bad", `{"path":"/a"}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), bad).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		st := kit.MustSteps(t, e.Store, "run-1")[0]
		kit.RequireObs(t, st, agentrt.ObsToolError)
		if msg, _ := kit.ObsContent(t, st)["error"].(string); !strings.Contains(msg, "tool bug") {
			t.Fatalf("tool error = %s", st.Observation.Content)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvToolStep, []kit.E{kit.StepFailed}, kit.EvComplete)
	})
	t.Run("policy", func(t *testing.T) {
		e := newEnv(t, bk)
		read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
		policy := agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
			panic("policy bug")
		})
		run, err := e.Driver(kit.Script(kit.Call("read", `{"path":"/a"}`), kit.Complete(`{}`)), policy, read).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
		if read.N() != 0 || !strings.Contains(run.ReasonDetail, "policy bug") {
			t.Fatalf("read ran %d times; detail %q", read.N(), run.ReasonDetail)
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepFailed, kit.RunFinished})
	})
	t.Run("agent", func(t *testing.T) {
		e := newEnv(t, bk)
		agent := agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
			panic("agent bug")
		})
		run, err := e.Driver(agent, agentrt.DefaultPolicy()).StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonAgentError)
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepFailed, kit.RunFinished})
	})
}
