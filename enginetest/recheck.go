package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// bytePolicy decides by reading bytes, as a hand-written policy might, and
// records the bytes it was handed for each step.
type bytePolicy struct {
	mu   sync.Mutex
	seen map[string][]string // step id -> args+schema handed, in order
}

func (p *bytePolicy) Evaluate(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
	p.mu.Lock()
	if p.seen == nil {
		p.seen = map[string][]string{}
	}
	p.seen[req.StepID] = append(p.seen[req.StepID], string(req.Args)+" "+string(req.Spec.InputSchema))
	p.mu.Unlock()
	switch {
	case bytes.Contains(req.Args, []byte("&&")):
		return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "no chained commands"}, nil
	case bytes.Contains(req.Args, []byte("<script>")):
		return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "no scripts"}, nil
	case !bytes.Contains(req.Spec.InputSchema, []byte("& reports <output>")):
		return agentrt.PolicyDecision{Outcome: agentrt.Abort, Reason: "not the schema this policy was written for"}, nil
	case req.Spec.Name == "send":
		return agentrt.NeedApproval("send", "sending", json.RawMessage(req.Args), map[string]string{"args": string(req.Args)})
	}
	return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
}

func (p *bytePolicy) handed(stepID string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[stepID]...)
}

const reportSchema = `{
	"type": "object",
	"description": "runs a command & reports <output>",
	"properties": { "cmd": { "type": "string" }, "to": { "type": "string" } }
}`

// byteRun records run-1 under a byte-reading policy: two requests denied for
// bytes an HTML-escaping encoder would rewrite, one allowed, one approved
// and resumed.
func byteRun(t *testing.T, e *env, policy agentrt.Policy) {
	t.Helper()
	shell := kit.NewTool("shell", agentrt.LocalMutation, reportSchema, nil)
	send := kit.NewTool("send", agentrt.RemoteMutation, reportSchema, nil)
	agent := kit.Script(
		kit.Call("shell", "{\n  \"cmd\": \"ls && rm -rf /\"\n}"),
		kit.Call("shell", `{ "cmd" : "echo <script>" }`),
		kit.Call("shell", `{"cmd":"ls"}`),
		kit.Call("send", `{"to": "a&b <c>", "cmd": "report"}`),
		kit.Complete(`{}`),
	)
	d := e.Driver(agent, policy, shell, send)
	startPaused(t, d, "run-1", agentrt.DefaultLimits())
	a := kit.PendingApproval(t, e.Store, "run-1")
	e.approve(t, a, "")
	resumeCompletes(t, d, "run-1")
	if shell.N() != 1 || send.N() != 1 {
		t.Fatalf("shell ran %d times, send %d; want once each", shell.N(), send.N())
	}
}

// A policy that matches bytes decides in a re-check as it decided in the
// loop and on resume, because it is handed identical bytes on every path:
// the arguments as the agent wrote them (pretty, with & and <) and the schema
// as registered come back from the record in the same PolicyJSON form. A
// stricter policy is named at exactly the steps it changes, and a re-check
// writes nothing.
func caseRecheck_ByteReadingPolicyDecidesAlike(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	live := &bytePolicy{}
	byteRun(t, e, live)
	steps := kit.MustSteps(t, e.Store, "run-1")
	before := e.db.snapshot(t)

	again := &bytePolicy{}
	rep, err := agentrt.Recheck(ctx, e.Store, "run-1", again, agentrt.RecheckOptions{})
	if err != nil {
		t.Fatalf("Recheck: %v", err)
	}
	e.db.requireUnchanged(t, before, "a re-check")
	wantOutcomes := []agentrt.PolicyOutcome{agentrt.Deny, agentrt.Deny, agentrt.Allow, agentrt.RequireApproval}
	if len(rep.Evaluations) != len(wantOutcomes) || rep.RunID != "run-1" {
		t.Fatalf("report = %+v", rep)
	}
	for i, ev := range rep.Evaluations {
		if ev.StepIndex != i || ev.StepID != steps[i].ID || ev.Recorded != wantOutcomes[i] || ev.Now != wantOutcomes[i] || ev.Result != agentrt.RecheckSame {
			t.Fatalf("evaluation %d = %+v, want %s re-checked the same", i, ev, wantOutcomes[i])
		}
	}
	if !rep.Same() || !rep.Complete() || len(rep.Differences()) != 0 {
		t.Fatalf("report not the same and complete: %+v", rep)
	}
	// The bytes: what the re-check handed equals what the loop handed, and
	// what the resume handed for the approved step.
	for i := 0; i < 4; i++ {
		loop := live.handed(steps[i].ID)
		rechecked := again.handed(steps[i].ID)
		if len(rechecked) != 1 || len(loop) == 0 {
			t.Fatalf("step %d: the loop handed %d requests, the re-check %d", i, len(loop), len(rechecked))
		}
		for _, l := range loop {
			if l != rechecked[0] {
				t.Fatalf("step %d: the loop handed\n %s\nthe re-check handed\n %s", i, l, rechecked[0])
			}
		}
	}
	if n := len(live.handed(steps[3].ID)); n != 2 {
		t.Fatalf("the approved step was evaluated %d times live, want in the loop and on resume", n)
	}

	// A stricter policy is named where it differs, and only there.
	stricter := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		if bytes.Contains(req.Args, []byte("<c>")) {
			return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "no tags"}, nil
		}
		return (&bytePolicy{}).Evaluate(ctx, req, view)
	})
	rep, err = agentrt.Recheck(ctx, e.Store, "run-1", stricter, agentrt.RecheckOptions{})
	if err != nil {
		t.Fatalf("Recheck: %v", err)
	}
	diff := rep.Differences()
	if len(diff) != 1 || diff[0].StepIndex != 3 || diff[0].Recorded != agentrt.RequireApproval || diff[0].Now != agentrt.Deny || rep.Same() || !rep.Complete() {
		t.Fatalf("stricter re-check = %+v", rep)
	}
	e.db.requireUnchanged(t, before, "a second re-check")
}

// What a re-check cannot ask again is said, never passed as the same: a
// policy that failed in the run, a spec neither stored nor given; a current
// tool that refuses the recorded arguments differs; a policy failing now
// differs; a missing run is ErrNotFound.
func caseRecheck_ReportsWhatItCannotAskAgain(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
	failing := false
	policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		if failing {
			return agentrt.PolicyDecision{}, errors.New("policy store unreachable")
		}
		return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
	})
	d := e.Driver(kit.Script(kit.Call("read", `{"path":"/a"}`), kit.Call("read", `{"path":"/b"}`)), agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
		if string(req.Args) == `{"path":"/b"}` {
			return agentrt.PolicyDecision{}, errors.New("boom")
		}
		return policy(ctx, req, view)
	}), read)
	startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonInternalError)

	rep, err := agentrt.Recheck(ctx, e.Store, "run-1", policy, agentrt.RecheckOptions{})
	if err != nil {
		t.Fatalf("Recheck: %v", err)
	}
	if len(rep.Evaluations) != 2 || rep.Evaluations[0].Result != agentrt.RecheckSame ||
		rep.Evaluations[1].Result != agentrt.RecheckNotRecheckable || rep.Evaluations[1].Recorded != "" || rep.Complete() || rep.Same() {
		t.Fatalf("report = %+v", rep)
	}

	failing = true
	rep, _ = agentrt.Recheck(ctx, e.Store, "run-1", policy, agentrt.RecheckOptions{})
	if ev := rep.Evaluations[0]; ev.Result != agentrt.RecheckDifferent || ev.Now != "" || ev.Recorded != agentrt.Allow {
		t.Fatalf("a policy failing now = %+v", ev)
	}
	failing = false

	// Without the stored spec, only a given tool can stand in.
	e.db.exec(t, 1, `DELETE FROM tool_specs`)
	rep, _ = agentrt.Recheck(ctx, e.Store, "run-1", policy, agentrt.RecheckOptions{})
	if ev := rep.Evaluations[0]; ev.Result != agentrt.RecheckNotRecheckable {
		t.Fatalf("no spec = %+v", ev)
	}
	rep, _ = agentrt.Recheck(ctx, e.Store, "run-1", policy, agentrt.RecheckOptions{Tools: kit.Tools(read)})
	if ev := rep.Evaluations[0]; ev.Result != agentrt.RecheckSame {
		t.Fatalf("given the current tool = %+v", ev)
	}
	stricter := kit.NewTool("read", agentrt.ReadOnly, `{"type":"object","properties":{"path":{"type":"string","pattern":"^/tmp/"}}}`, nil)
	rep, _ = agentrt.Recheck(ctx, e.Store, "run-1", policy, agentrt.RecheckOptions{Tools: kit.Tools(stricter)})
	if ev := rep.Evaluations[0]; ev.Result != agentrt.RecheckDifferent || ev.Now != "" {
		t.Fatalf("a current tool refusing the arguments = %+v", ev)
	}

	if _, err := agentrt.Recheck(ctx, e.Store, "no-such-run", policy, agentrt.RecheckOptions{}); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("Recheck of a missing run = %v, want ErrNotFound", err)
	}
	if !reflect.DeepEqual(rep.Differences(), rep.Evaluations[:1]) {
		t.Fatalf("Differences = %+v", rep.Differences())
	}
}

// namedPolicy answers pd and names itself id, as a policy file's hash does.
type namedPolicy struct {
	id string
	pd agentrt.PolicyDecision
}

func (p namedPolicy) Evaluate(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
	return p.pd, nil
}

func (p namedPolicy) PolicyID() string { return p.id }

// A payment paused on two of finance under policy v1 re-checks the same
// under v1; a requirement of three, or another policy version asking for
// the same two, is another approval whose votes would not carry over, and
// each is a difference named for what changed.
func caseRecheck_ChangedRequirementIsADifference(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	d := e.Driver(kit.Script(kit.Call("send", `{"path":"/report"}`)), namedPolicy{"v1", twoOfFinance()}, send)
	startPaused(t, d, "run-1", agentrt.DefaultLimits())
	if a := kit.PendingApproval(t, e.Store, "run-1"); a.PolicyVersion != "v1" || a.Requirement == nil {
		t.Fatalf("the approval binds version %q and requirement %+v", a.PolicyVersion, a.Requirement)
	}
	three := twoOfFinance()
	three.Requirement.Stages[0].M = 3
	for _, c := range []struct {
		what   string
		policy agentrt.Policy
		want   agentrt.RecheckResult
		detail string
	}{
		{"the same policy", namedPolicy{"v1", twoOfFinance()}, agentrt.RecheckSame, ""},
		{"three of finance", namedPolicy{"v1", three}, agentrt.RecheckDifferent, "another requirement"},
		{"policy v2", namedPolicy{"v2", twoOfFinance()}, agentrt.RecheckDifferent, `was "v1", now "v2"`},
		{"an unnamed policy", kit.Fixed(twoOfFinance()), agentrt.RecheckDifferent, `was "v1", now ""`},
	} {
		rep, err := agentrt.Recheck(ctx, e.Store, "run-1", c.policy, agentrt.RecheckOptions{})
		if err != nil {
			t.Fatalf("%s: Recheck: %v", c.what, err)
		}
		if len(rep.Evaluations) != 1 {
			t.Fatalf("%s: report = %+v", c.what, rep)
		}
		ev := rep.Evaluations[0]
		if ev.Result != c.want || ev.Recorded != agentrt.RequireApproval || ev.Now != agentrt.RequireApproval ||
			!strings.Contains(ev.Detail, c.detail) || (c.want == agentrt.RecheckDifferent) != (len(rep.Differences()) == 1) {
			t.Fatalf("%s: evaluation = %+v; want %s naming %q", c.what, ev, c.want, c.detail)
		}
	}
	if send.N() != 0 {
		t.Fatalf("a re-check executed the payment %d times", send.N())
	}
}
