package policycli

import (
	"encoding/json"
	"flag"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

var explainCommand = &command{
	name:  "explain",
	usage: "FILE -tool NAME [-side-effect CLASS] [-args JSON] [-steps N]",
	help: `Judges one request with FILE and prints, rule by rule, whether the rule
matched the tool and side effect and what its when evaluated to, then the
decision and the rule that made it. Exits 1 when an expression fails.
  -tool NAME          the requested tool (required)
  -side-effect CLASS  read_only, local_mutation, remote_mutation or
                      destructive (default none: rules that name side
                      effects do not match)
  -args JSON          the request's arguments, a JSON object (default {})
  -steps N            run.steps (default 1); also -model-calls, -tokens
                      (input), -cost-micros, -active-time, -approvals`,
	run: runExplain,
}

func runExplain(e *env, c *command, args []string) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	tool := fs.String("tool", "", "the requested tool")
	side := fs.String("side-effect", "", "the tool's side-effect class")
	rawArgs := fs.String("args", "{}", "the request's arguments")
	steps := fs.Int("steps", 1, "run.steps")
	calls := fs.Int("model-calls", 0, "run.model_calls")
	tokens := fs.Int64("tokens", 0, "run.input_tokens")
	cost := fs.Int64("cost-micros", 0, "run.cost_micros")
	active := fs.Duration("active-time", 0, "run.active_time")
	approvals := fs.Int("approvals", 0, "run.approvals")
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		return e.usageError(c, "explain takes exactly one policy file")
	case *tool == "":
		return e.usageError(c, "-tool is required")
	case *side != "" && !agentrt.SideEffect(*side).Valid():
		return e.usageError(c, fmt.Sprintf("unknown side effect %q", s(*side)))
	case *steps < 0 || *calls < 0 || *tokens < 0 || *cost < 0 || *active < 0 || *approvals < 0 || *approvals > 10000:
		return e.usageError(c, "run counters must not be negative (and -approvals is at most 10000)")
	}
	if err := agentrt.CheckJSON([]byte(*rawArgs)); err != nil {
		return e.usageError(c, "-args is not acceptable JSON: "+s(err.Error()))
	}
	pargs, err := agentrt.PolicyJSON([]byte(*rawArgs))
	if err != nil {
		return e.usageError(c, "-args is not acceptable JSON: "+s(err.Error()))
	}
	p, code := e.load(pos[0])
	if p == nil {
		return code
	}
	req := agentrt.ToolRequest{RunID: "policy-explain", StepID: "explain",
		Spec: agentrt.ToolSpec{Name: *tool, SideEffect: agentrt.SideEffect(*side), InputSchema: json.RawMessage("{}"), Timeout: time.Minute},
		Args: pargs}
	view := agentrt.RunView{Run: agentrt.Run{ID: "policy-explain", Status: agentrt.RunRunning, StepCount: *steps, ModelCalls: *calls,
		Usage: agentrt.Usage{InputTokens: *tokens}, EstimatedCost: agentrt.Micros(*cost), ActiveTime: *active}}
	if *approvals > 0 {
		view.Approvals = agentrt.NewApprovals(make([]agentrt.Approval, *approvals)...)
	}
	ex := p.Explain(req, view)
	fmt.Fprintf(e.stdout, "request: tool %s, side effect %s, args %s\n", s(*tool), s(orNone(*side)), s(string(pargs)))
	for _, r := range ex.Rules {
		match := "no match"
		if r.Matched {
			match = "matched"
		}
		if r.When == "" {
			fmt.Fprintf(e.stdout, "  %-24s %-9s %s\n", s(r.Rule), match, s(r.Result))
			continue
		}
		fmt.Fprintf(e.stdout, "  %-24s %-9s when %s => %s\n", s(r.Rule), match, s(r.When), s(r.Result))
	}
	if ex.Err != nil {
		return e.fail("the policy fails on this request, which ends a run: %v", ex.Err)
	}
	d := ex.Decision
	fmt.Fprintf(e.stdout, "decision: %s by rule %s: %s\n", d.Outcome, s(ex.Rule), s(d.Reason))
	if d.Outcome == agentrt.RequireApproval {
		fmt.Fprintf(e.stdout, "  kind %s", s(d.Kind))
		if d.TTL > 0 {
			fmt.Fprintf(e.stdout, ", ttl %s", d.TTL)
		}
		if d.RequireSignature {
			fmt.Fprint(e.stdout, ", needs a signed grant")
		}
		fmt.Fprintf(e.stdout, "\n  presentation %s\n  capability %s\n", s(string(d.Presentation)), s(string(d.Capability)))
	}
	return ExitOK
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
