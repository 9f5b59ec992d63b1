package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	agentrt "github.com/agentrt/agentrt"
)

// Refused is the outcome CheckPolicy reports for a request the runtime
// refuses before any policy sees it: an unknown tool, or arguments that are
// not acceptable JSON or do not match the tool's schema.
const Refused agentrt.PolicyOutcome = "refused"

// PolicyCase is one row of a policy table: a request and what the policy
// must decide about it.
type PolicyCase struct {
	// Name identifies the case in a report; empty means its index.
	Name string
	// Tool is the requested tool's name.
	Tool string
	// Args are the request's arguments as the agent would send them;
	// empty means {}.
	Args string
	// View is the run the policy is shown; zero is a fresh RUNNING run.
	View agentrt.RunView
	// Want is the outcome the policy must reach, or Refused.
	Want agentrt.PolicyOutcome
	// Kind, when set, must equal the approval kind of a RequireApproval.
	Kind string
	// Reason, Capability and Presentation, when set, must be substrings of
	// the decision's reason and of its capability and presentation JSON.
	Reason       string
	Capability   string
	Presentation string
}

// CheckPolicy judges every case with p as the runtime would: the tool must
// be among tools and the arguments must pass the runtime's JSON checks and
// the tool's schema (else the outcome is Refused, and p is not asked), and
// p is handed the request in PolicyJSON form. Every disagreement is
// reported together, as one table.
func CheckPolicy(t testing.TB, p agentrt.Policy, tools []agentrt.Tool, cases []PolicyCase) {
	t.Helper()
	schemas := map[string]*agentrt.ToolSchema{}
	for _, tl := range tools {
		ts, err := agentrt.CompileTool(tl.Spec())
		if err != nil {
			t.Fatalf("CheckPolicy: tool %q: %v", tl.Spec().Name, err)
		}
		schemas[tl.Spec().Name] = ts
	}
	type row struct{ name, tool, want, got string }
	var bad []row
	for i, c := range cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		got, why := judge(p, schemas, c, i)
		var problems []string
		if got.Outcome != c.Want {
			problems = append(problems, "outcome")
		} else {
			if c.Kind != "" && got.Kind != c.Kind {
				problems = append(problems, fmt.Sprintf("kind %q", got.Kind))
			}
			if c.Reason != "" && !strings.Contains(got.Reason, c.Reason) {
				problems = append(problems, fmt.Sprintf("reason %q", got.Reason))
			}
			if c.Capability != "" && !strings.Contains(string(got.Capability), c.Capability) {
				problems = append(problems, fmt.Sprintf("capability %s", got.Capability))
			}
			if c.Presentation != "" && !strings.Contains(string(got.Presentation), c.Presentation) {
				problems = append(problems, fmt.Sprintf("presentation %s", got.Presentation))
			}
		}
		if len(problems) == 0 {
			continue
		}
		want := string(c.Want)
		if c.Kind != "" {
			want += " (" + c.Kind + ")"
		}
		desc := string(got.Outcome)
		if why != "" {
			desc += ": " + why
		} else if got.Reason != "" {
			desc += ": " + got.Reason
		}
		if problems[0] != "outcome" {
			desc += "; wrong " + strings.Join(problems, ", ")
		}
		bad = append(bad, row{name, c.Tool, want, desc})
	}
	if len(bad) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CheckPolicy: %d of %d cases disagree:\n", len(bad), len(cases))
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  case\ttool\twant\tgot")
	for _, r := range bad {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.name, r.tool, r.want, oneLine(r.got))
	}
	tw.Flush()
	t.Error(strings.TrimRight(b.String(), "\n"))
}

// judge returns what the runtime and p make of c: Refused with the reason,
// or p's decision.
func judge(p agentrt.Policy, schemas map[string]*agentrt.ToolSchema, c PolicyCase, i int) (pd agentrt.PolicyDecision, why string) {
	ts := schemas[c.Tool]
	if ts == nil {
		return agentrt.PolicyDecision{Outcome: Refused}, fmt.Sprintf("unknown tool %q", c.Tool)
	}
	args := json.RawMessage(c.Args)
	if strings.TrimSpace(c.Args) == "" {
		args = json.RawMessage("{}")
	}
	if err := agentrt.CheckJSON(args); err != nil {
		return agentrt.PolicyDecision{Outcome: Refused}, err.Error()
	}
	if err := ts.Check(args); err != nil {
		return agentrt.PolicyDecision{Outcome: Refused}, err.Error()
	}
	pargs, err := agentrt.PolicyJSON(args)
	if err != nil {
		return agentrt.PolicyDecision{Outcome: Refused}, err.Error()
	}
	spec := ts.Spec()
	if spec.InputSchema, err = agentrt.PolicyJSON(spec.InputSchema); err != nil {
		return agentrt.PolicyDecision{Outcome: Refused}, err.Error()
	}
	view := c.View
	if view.Run.ID == "" {
		view.Run = agentrt.Run{ID: "testkit-policy", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), StepCount: view.Steps.Len() + 1}
	}
	req := agentrt.ToolRequest{RunID: view.Run.ID, StepID: fmt.Sprintf("testkit-step-%d", i), Spec: spec, Args: pargs}
	defer func() {
		if r := recover(); r != nil {
			pd, why = agentrt.PolicyDecision{Outcome: "panic"}, fmt.Sprint(r)
		}
	}()
	pd, err = p.Evaluate(context.Background(), req, view)
	if err != nil {
		return agentrt.PolicyDecision{Outcome: "error"}, err.Error()
	}
	return pd, ""
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	return s
}
