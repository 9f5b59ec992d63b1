package cel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
)

func mustParse(t testing.TB, src string) *cel.Policy {
	t.Helper()
	p, err := cel.Parse([]byte(src), cel.YAML)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func request(tool string, se agentrt.SideEffect, args string) agentrt.ToolRequest {
	return agentrt.ToolRequest{RunID: "run-1", StepID: "step-1",
		Spec: agentrt.ToolSpec{Name: tool, SideEffect: se, InputSchema: json.RawMessage(`{"type":"object"}`), Timeout: time.Second},
		Args: json.RawMessage(args)}
}

// features is a file that uses every rule feature once.
const features = `
rules:
  - name: late
    when: run.steps > 50
    outcome: abort
    reason: too many steps
  - name: reads-in-project
    match: {tools: ["fs.read*", "fs.list"], side_effects: [read_only]}
    when: args.path.startsWith("/project/")
    outcome: allow
  - name: writes-outside
    match: {side_effects: [local_mutation]}
    when: '!args.path.startsWith("/project/")'
    outcome: deny
    reason: writes stay in the project
  - name: big-payment
    match: {tools: [pay]}
    when: args.amount > 1000
    outcome: require_approval
    kind: payment
    ttl: 15m
    reason: payments over 1000 need approval
    presentation: {amount: args.amount, to: args.to, note: '"pay " + args.to'}
    capability: {max: args.amount, tools: '[tool.name]'}
  - name: small-payment
    match: {tools: [pay]}
    outcome: allow
  - name: spend
    when: run.tokens > 1000 || run.cost_micros > 5000000 || run.model_calls > 10 || run.active_time > duration("1h")
    outcome: deny
    reason: budget
  - name: second-approval
    when: run.approvals >= 2
    outcome: deny
    reason: asked twice already
  - name: by-name
    match: {tools: ["sh?ll"]}
    when: tool.side_effect == "destructive" && tool.name.size() == 5
    outcome: deny
    reason: no shells
  - name: hash-pinned
    when: tool.spec_hash.size() == 64
    outcome: require_approval
default: {outcome: deny, reason: nothing matched}
`

// Every rule feature decides as the file says: globs and side effects in
// match, when over tool, args and each run counter, first match wins, the
// approval's kind, ttl, presentation and capability, the default reason,
// and the default outcome when nothing matches.
func TestPolicy_EveryRuleFeatureDecidesAsWritten(t *testing.T) {
	p := mustParse(t, features)
	run := func(fn func(r *agentrt.Run)) agentrt.RunView {
		v := agentrt.RunView{Run: agentrt.Run{ID: "run-1", Status: agentrt.RunRunning, StepCount: 1}}
		if fn != nil {
			fn(&v.Run)
		}
		return v
	}
	cases := []struct {
		name         string
		req          agentrt.ToolRequest
		view         agentrt.RunView
		want         agentrt.PolicyOutcome
		reason       string
		kind         string
		ttl          time.Duration
		presentation string
		capability   string
	}{
		{"read in the project", request("fs.read_file", agentrt.ReadOnly, `{"path":"/project/a"}`), run(nil), agentrt.Allow, "rule reads-in-project: allow", "", 0, "", ""},
		{"a literal tool name", request("fs.list", agentrt.ReadOnly, `{"path":"/project/"}`), run(nil), agentrt.Allow, "", "", 0, "", ""},
		{"read outside the project", request("fs.read_file", agentrt.ReadOnly, `{"path":"/etc/passwd"}`), run(nil), "hash-pinned", "", "", 0, "", ""},
		{"read-named tool of another class", request("fs.read_file", agentrt.LocalMutation, `{"path":"/project/a"}`), run(nil), "hash-pinned", "", "", 0, "", ""},
		{"write outside", request("fs.write", agentrt.LocalMutation, `{"path":"/tmp/x"}`), run(nil), agentrt.Deny, "writes stay in the project", "", 0, "", ""},
		{"big payment", request("pay", agentrt.RemoteMutation, `{"amount":1500.25,"to":"bob"}`), run(nil), agentrt.RequireApproval, "payments over 1000 need approval", "payment", 15 * time.Minute,
			`{"amount":1500.25,"note":"pay bob","to":"bob"}`, `{"max":1500.25,"tools":["pay"]}`},
		{"big integer payment", request("pay", agentrt.RemoteMutation, `{"amount":2000,"to":"eve"}`), run(nil), agentrt.RequireApproval, "", "payment", 15 * time.Minute,
			`{"amount":2000,"note":"pay eve","to":"eve"}`, ""},
		{"small payment", request("pay", agentrt.RemoteMutation, `{"amount":10,"to":"bob"}`), run(nil), agentrt.Allow, "", "", 0, "", ""},
		{"first match wins over a later rule", request("pay", agentrt.RemoteMutation, `{"amount":10}`), run(func(r *agentrt.Run) { r.StepCount = 51 }), agentrt.Abort, "too many steps", "", 0, "", ""},
		{"step 50 is not late", request("pay", agentrt.RemoteMutation, `{"amount":10}`), run(func(r *agentrt.Run) { r.StepCount = 50 }), agentrt.Allow, "", "", 0, "", ""},
		{"tokens", request("x", agentrt.ReadOnly, `{}`), run(func(r *agentrt.Run) { r.Usage = agentrt.Usage{InputTokens: 900, OutputTokens: 200} }), agentrt.Deny, "budget", "", 0, "", ""},
		{"cost", request("x", agentrt.ReadOnly, `{}`), run(func(r *agentrt.Run) { r.EstimatedCost = 6_000_000 }), agentrt.Deny, "budget", "", 0, "", ""},
		{"model calls", request("x", agentrt.ReadOnly, `{}`), run(func(r *agentrt.Run) { r.ModelCalls = 11 }), agentrt.Deny, "budget", "", 0, "", ""},
		{"active time", request("x", agentrt.ReadOnly, `{}`), run(func(r *agentrt.Run) { r.ActiveTime = 2 * time.Hour }), agentrt.Deny, "budget", "", 0, "", ""},
		{"approvals so far", request("x", agentrt.ReadOnly, `{}`), agentrt.RunView{Run: agentrt.Run{StepCount: 3}, Approvals: agentrt.NewApprovals(make([]agentrt.Approval, 2)...)}, agentrt.Deny, "asked twice already", "", 0, "", ""},
		{"glob ? and side effect", request("shell", agentrt.Destructive, `{}`), run(nil), agentrt.Deny, "no shells", "", 0, "", ""},
		{"default kind is the rule name", request("x", agentrt.ReadOnly, `{}`), run(nil), agentrt.RequireApproval, "rule hash-pinned: require_approval", "hash-pinned", 0, "{}", "{}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pd, err := p.Evaluate(context.Background(), c.req, c.view)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			want := c.want
			if want == "hash-pinned" {
				want = agentrt.RequireApproval // reads outside fall to hash-pinned
			}
			if pd.Outcome != want {
				t.Fatalf("outcome %s (%s), want %s", pd.Outcome, pd.Reason, want)
			}
			if c.reason != "" && pd.Reason != c.reason {
				t.Errorf("reason %q, want %q", pd.Reason, c.reason)
			}
			if c.kind != "" && pd.Kind != c.kind {
				t.Errorf("kind %q, want %q", pd.Kind, c.kind)
			}
			if pd.TTL != c.ttl {
				t.Errorf("ttl %s, want %s", pd.TTL, c.ttl)
			}
			if c.presentation != "" && string(pd.Presentation) != c.presentation {
				t.Errorf("presentation %s, want %s", pd.Presentation, c.presentation)
			}
			if c.capability != "" && string(pd.Capability) != c.capability {
				t.Errorf("capability %s, want %s", pd.Capability, c.capability)
			}
			if pd.Outcome != agentrt.RequireApproval && (pd.Presentation != nil || pd.Capability != nil || pd.Kind != "") {
				t.Errorf("a %s carries approval fields: %+v", pd.Outcome, pd)
			}
		})
	}
	// Nothing matches: the default decides.
	pd, err := mustParse(t, "rules:\n  - name: r\n    match: {tools: [a]}\n    outcome: allow\ndefault: {outcome: deny, reason: nothing matched}\n").
		Evaluate(context.Background(), request("b", agentrt.ReadOnly, `{}`), agentrt.RunView{})
	if err != nil || pd.Outcome != agentrt.Deny || pd.Reason != "nothing matched" {
		t.Fatalf("default = %+v, %v", pd, err)
	}
}

// An expression that fails, or spends more than its cost limit on a hostile
// argument (a huge string, a deep list, a regular expression over a long
// input), makes Evaluate return an EvalError and no outcome: the runtime
// ends the run as a policy failure and never allows. Arguments larger than
// the file's bound and arguments that are not an object fail the same way.
func TestPolicy_EvaluationFailuresAreErrorsNeverAllows(t *testing.T) {
	long := strings.Repeat("a", 200_000)
	deep := "1"
	for range 200 {
		deep = "[" + deep + "," + deep[:min(len(deep), 1)] + "]"
	}
	wide := "[" + strings.Repeat(`[1,2,3,4,5,6,7,8,9,10],`, 3000) + "[]]"
	cases := []struct {
		name string
		when string
		args string
		cost bool
	}{
		{"missing key", `args.amount > 1`, `{}`, false},
		{"wrong type at run time", `args.amount > 1`, `{"amount":"lots"}`, false},
		{"arguments not an object", `args.size() > 0`, `[1,2]`, false},
		{"arguments over the bound", `args.size() > 0`, `{"s":"` + strings.Repeat("x", 2000) + `"}`, false},
		{"division by zero", `1 / (args.n - args.n) == 0`, `{"n":3}`, false},
		{"huge string", `args.s.split("a").size() > 0 && args.s.lowerAscii().contains("b")`, `{"s":"` + long + `"}`, true},
		{"regex on a long input", `args.s.matches("^(a|aa)*b$")`, `{"s":"` + strings.Repeat(long, 4) + `"}`, true},
		{"deep list", `args.l.exists(x, x.exists(y, y.exists(z, z == 2)))`, `{"l":` + wide + `}`, true},
		{"nested comprehension", `args.l.all(x, args.l.all(y, x != y || true))`, `{"l":` + wide + `}`, true},
		{"deeply nested value", `string(args.d).size() > 0`, `{"d":` + deep + `}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			limits := "limits: {cost: 100000, args_bytes: 1000000}\n"
			if c.name == "arguments over the bound" {
				limits = "limits: {args_bytes: 1000}\n"
			}
			src := fmt.Sprintf("%srules:\n  - name: hostile\n    when: %q\n    outcome: deny\ndefault: {outcome: allow}\n", limits, c.when)
			p := mustParse(t, src)
			pd, err := p.Evaluate(context.Background(), request("t", agentrt.ReadOnly, c.args), agentrt.RunView{})
			if err == nil {
				t.Fatalf("Evaluate = %+v, want an error", pd)
			}
			if pd.Outcome != "" {
				t.Fatalf("an error came with the outcome %s", pd.Outcome)
			}
			var ee *cel.EvalError
			if !errors.As(err, &ee) || !errors.Is(err, cel.ErrEvaluation) || ee.Rule != "hostile" {
				t.Fatalf("error %T %v, want an *EvalError of rule hostile", err, err)
			}
			if got := errors.Is(err, cel.ErrCostLimit); got != c.cost {
				t.Fatalf("cost limit = %v, want %v (%v)", got, c.cost, err)
			}
		})
	}
}

// A presentation value that has no JSON form (bytes, a non-finite number)
// is an evaluation error, not a presentation with a stand-in.
func TestPolicy_PresentationWithoutJSONFormIsAnError(t *testing.T) {
	for _, ex := range []string{`b"raw"`, `1.0/0.0`, `{1: "a"}`, `type(1)`} {
		src := fmt.Sprintf("rules: []\ndefault:\n  outcome: require_approval\n  presentation: {v: %q}\n", ex)
		_, err := mustParse(t, src).Evaluate(context.Background(), request("t", agentrt.ReadOnly, `{}`), agentrt.RunView{})
		var ee *cel.EvalError
		if !errors.As(err, &ee) || ee.Field != "presentation.v" {
			t.Errorf("%s: error %v, want an EvalError on presentation.v", ex, err)
		}
	}
}
