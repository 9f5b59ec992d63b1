package policycli

import (
	"encoding/json"
	"flag"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cliflag"
)

// explainOptions are the request explain judges and the run it is judged in.
type explainOptions struct {
	tool, side, args string
	steps, calls     int
	tokens, cost     int64
	active           time.Duration
	approvals        int
}

var explainCommand = &command{
	Name:    "explain",
	Summary: "show which rule decides one request, and why",
	Usage:   "FILE -tool NAME [-side-effect CLASS] [-args JSON] [-steps N]",
	Help: `Judges one request with FILE and prints, rule by rule, whether the rule
matched the tool and side effect and what its when evaluated to, then the
decision and the rule that made it. Exits 1 when an expression fails.
  -tool NAME          the requested tool (required)
  -side-effect CLASS  read_only, local_mutation, remote_mutation or
                      destructive (default none: rules that name side
                      effects do not match)
  -args JSON          the request's arguments, a JSON object (default {})
  -steps N            run.steps (default 1); also -model-calls, -tokens
                      (input), -cost-micros, -active-time, -approvals`,
	Bind: cliflag.With(explainFlags, runExplain),
}

func explainFlags(fs *flag.FlagSet, o *explainOptions) {
	fs.StringVar(&o.tool, "tool", "", "the requested tool")
	fs.StringVar(&o.side, "side-effect", "", "the tool's side-effect class")
	fs.StringVar(&o.args, "args", "{}", "the request's arguments")
	fs.IntVar(&o.steps, "steps", 1, "run.steps")
	fs.IntVar(&o.calls, "model-calls", 0, "run.model_calls")
	fs.Int64Var(&o.tokens, "tokens", 0, "run.input_tokens")
	fs.Int64Var(&o.cost, "cost-micros", 0, "run.cost_micros")
	fs.DurationVar(&o.active, "active-time", 0, "run.active_time")
	fs.IntVar(&o.approvals, "approvals", 0, "run.approvals")
}

func runExplain(e *env, o *explainOptions, pos []string) int {
	switch {
	case len(pos) != 1:
		return e.usageError("explain takes exactly one policy file")
	case o.tool == "":
		return e.usageError("-tool is required")
	case o.side != "" && !agentrt.SideEffect(o.side).Valid():
		return e.usageError(fmt.Sprintf("unknown side effect %q", s(o.side)))
	case o.steps < 0 || o.calls < 0 || o.tokens < 0 || o.cost < 0 || o.active < 0 || o.approvals < 0 || o.approvals > 10000:
		return e.usageError("run counters must not be negative (and -approvals is at most 10000)")
	}
	if err := agentrt.CheckJSON([]byte(o.args)); err != nil {
		return e.usageError("-args is not acceptable JSON: " + s(err.Error()))
	}
	pargs, err := agentrt.PolicyJSON([]byte(o.args))
	if err != nil {
		return e.usageError("-args is not acceptable JSON: " + s(err.Error()))
	}
	p, code := e.load(pos[0])
	if p == nil {
		return code
	}
	req := agentrt.ToolRequest{RunID: "policy-explain", StepID: "explain",
		Spec: agentrt.ToolSpec{Name: o.tool, SideEffect: agentrt.SideEffect(o.side), InputSchema: json.RawMessage("{}"), Timeout: time.Minute},
		Args: pargs}
	view := agentrt.RunView{Run: agentrt.Run{ID: "policy-explain", Status: agentrt.RunRunning, StepCount: o.steps, ModelCalls: o.calls,
		Usage: agentrt.Usage{InputTokens: o.tokens}, EstimatedCost: agentrt.Micros(o.cost), ActiveTime: o.active}}
	if o.approvals > 0 {
		view.Approvals = agentrt.NewApprovals(make([]agentrt.Approval, o.approvals)...)
	}
	ex := p.Explain(req, view)
	fmt.Fprintf(e.stdout, "request: tool %s, side effect %s, args %s\n", s(o.tool), s(orNone(o.side)), s(string(pargs)))
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
