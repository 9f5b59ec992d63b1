package cel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Case is one row of a policy's test table: a request, the run it is asked
// in, and what the policy must decide.
type Case struct {
	Name string
	Line int
	// Request and View are handed to the policy as the runtime would.
	Request agentrt.ToolRequest
	View    agentrt.RunView
	Want    Want
}

// Want is what a case expects. Outcome is required; every other field,
// when set, must equal the decision's exactly (Presentation and Capability
// compared as canonical JSON).
type Want struct {
	Outcome      agentrt.PolicyOutcome
	Rule         string
	Reason       string
	Kind         string
	Presentation json.RawMessage
	Capability   json.RawMessage
	// Error expects the evaluation to fail (Outcome is then "error").
	Error bool
}

// CaseResult is what running one case found. Failures is empty when the
// case passed.
type CaseResult struct {
	Case     Case
	Rule     string
	Decision agentrt.PolicyDecision
	Err      error
	Failures []string
}

// LoadCases reads a test table owner-only (as Load reads a policy file).
func LoadCases(path string) ([]Case, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := readOwned(path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	cs, err := ParseCases(data, f)
	if fe, ok := err.(*FileError); ok {
		fe.Path = path
	}
	return cs, err
}

// ParseCases reads a test table: {cases: [{name, tool, side_effect, args,
// run: {steps, model_calls, input_tokens, output_tokens, cost_micros,
// active_time, approvals}, want: {outcome, rule, reason, kind,
// presentation, capability}}]}, parsed as strictly as a policy file.
func ParseCases(data []byte, f Format) ([]Case, error) {
	root, err := parseTree(data, f)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	if err := d.object(root, "", "cases"); err != nil {
		return nil, err
	}
	list, ok := root.get("cases")
	if !ok || list.kind != kindArray {
		return nil, d.errAt(root, "cases", "is required: a list of cases")
	}
	var out []Case
	seen := map[string]int{}
	for i, n := range list.items {
		c, err := d.testCase(n, i)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[c.Name]; dup {
			return nil, d.errAt(n, "name", "the case name %q is used twice (first at line %d)", c.Name, first)
		}
		seen[c.Name] = n.line
		out = append(out, c)
	}
	return out, nil
}

func (d *decoder) testCase(n *node, i int) (Case, error) {
	d.rule = ""
	c := Case{Line: n.line}
	if err := d.object(n, fmt.Sprintf("cases[%d]", i), "name", "tool", "side_effect", "args", "run", "want"); err != nil {
		return c, err
	}
	c.Name = fmt.Sprintf("#%d", i+1)
	if v, ok := n.get("name"); ok {
		s, err := d.name(v, "name")
		if err != nil {
			return c, err
		}
		c.Name = s
	}
	req, err := d.caseRequest(n, i)
	if err != nil {
		return c, err
	}
	c.Request = req
	c.View = agentrt.RunView{Run: agentrt.Run{ID: "policy-test", Status: agentrt.RunRunning, StepCount: 1, Limits: agentrt.DefaultLimits()}}
	if v, ok := n.get("run"); ok {
		if err := d.runView(v, &c.View); err != nil {
			return c, err
		}
	}
	wn, ok := n.get("want")
	if !ok {
		return c, d.errAt(n, "want", "is required")
	}
	c.Want, err = d.want(wn)
	return c, err
}

// caseRequest decodes the request a case judges: its tool, side effect
// and arguments.
func (d *decoder) caseRequest(n *node, i int) (agentrt.ToolRequest, error) {
	tn, ok := n.get("tool")
	if !ok {
		return agentrt.ToolRequest{}, d.errAt(n, "tool", "is required")
	}
	tool, err := d.name(tn, "tool")
	if err != nil {
		return agentrt.ToolRequest{}, err
	}
	spec := agentrt.ToolSpec{Name: tool, InputSchema: json.RawMessage("{}"), Timeout: time.Minute}
	if v, ok := n.get("side_effect"); ok {
		s, err := d.name(v, "side_effect")
		if err != nil {
			return agentrt.ToolRequest{}, err
		}
		if !knownSideEffect(agentrt.SideEffect(s)) {
			return agentrt.ToolRequest{}, d.errAt(v, "side_effect", "unknown side effect %q", s)
		}
		spec.SideEffect = agentrt.SideEffect(s)
	}
	args := json.RawMessage("{}")
	if v, ok := n.get("args"); ok {
		var b bytes.Buffer
		v.toJSON(&b)
		pj, err := agentrt.PolicyJSON(b.Bytes())
		if err != nil {
			return agentrt.ToolRequest{}, d.errAt(v, "args", "%v", err)
		}
		args = pj
	}
	return agentrt.ToolRequest{RunID: "policy-test", StepID: fmt.Sprintf("case-%d", i+1), Spec: spec, Args: args}, nil
}

// want decodes what a case expects the policy to decide.
func (d *decoder) want(wn *node) (Want, error) {
	var w Want
	if err := d.object(wn, "want", "outcome", "rule", "reason", "kind", "presentation", "capability"); err != nil {
		return w, err
	}
	on, ok := wn.get("outcome")
	if !ok {
		return w, d.errAt(wn, "want.outcome", "is required (allow, deny, abort, require_approval or error)")
	}
	o, err := d.name(on, "want.outcome")
	if err != nil {
		return w, err
	}
	w.Outcome = agentrt.PolicyOutcome(o)
	if o == "error" {
		w.Error = true
	} else if !w.Outcome.Valid() {
		return w, d.errAt(on, "want.outcome", "unknown outcome %q", o)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"rule", &w.Rule}, {"reason", &w.Reason}, {"kind", &w.Kind}} {
		if v, ok := wn.get(f.key); ok {
			if *f.dst, err = d.str(v, "want."+f.key, MaxReasonBytes); err != nil {
				return w, err
			}
		}
	}
	for _, f := range []struct {
		key string
		dst *json.RawMessage
	}{{"presentation", &w.Presentation}, {"capability", &w.Capability}} {
		if v, ok := wn.get(f.key); ok {
			var b bytes.Buffer
			v.toJSON(&b)
			*f.dst = append(json.RawMessage(nil), b.Bytes()...)
		}
	}
	return w, nil
}

func (d *decoder) runView(n *node, v *agentrt.RunView) error {
	if err := d.object(n, "run", "steps", "model_calls", "input_tokens", "output_tokens", "cost_micros", "active_time", "approvals"); err != nil {
		return err
	}
	ints := []struct {
		key string
		set func(int64)
	}{
		{"steps", func(x int64) { v.Run.StepCount = int(x) }},
		{"model_calls", func(x int64) { v.Run.ModelCalls = int(x) }},
		{"input_tokens", func(x int64) { v.Run.Usage.InputTokens = x }},
		{"output_tokens", func(x int64) { v.Run.Usage.OutputTokens = x }},
		{"cost_micros", func(x int64) { v.Run.EstimatedCost = agentrt.Micros(x) }},
		{"approvals", func(x int64) { v.Approvals = agentrt.NewApprovals(make([]agentrt.Approval, x)...) }},
	}
	for _, f := range ints {
		x, ok := n.get(f.key)
		if !ok {
			continue
		}
		u, err := d.count(x, "run."+f.key, 1<<40)
		if err != nil && !(x.kind == kindNumber && x.str == "0") {
			return err
		}
		if f.key == "approvals" && u > 10000 {
			return d.errAt(x, "run.approvals", "at most 10000")
		}
		f.set(int64(u))
	}
	if x, ok := n.get("active_time"); ok {
		s, err := d.str(x, "run.active_time", MaxNameBytes)
		if err != nil {
			return err
		}
		dur, perr := time.ParseDuration(s)
		if perr != nil || dur < 0 {
			return d.errAt(x, "run.active_time", "must be a duration such as 90s, got %q", s)
		}
		v.Run.ActiveTime = dur
	}
	return nil
}

// Run judges each case and reports what differs from what it wants.
func (p *Policy) Run(cases []Case) []CaseResult {
	out := make([]CaseResult, 0, len(cases))
	for _, c := range cases {
		pd, rule, err := p.Decide(c.Request, c.View)
		r := CaseResult{Case: c, Rule: rule, Decision: pd, Err: err}
		w := c.Want
		switch {
		case w.Error && err == nil:
			r.Failures = append(r.Failures, fmt.Sprintf("want an evaluation error, got %s", pd.Outcome))
		case !w.Error && err != nil:
			r.Failures = append(r.Failures, fmt.Sprintf("want %s, got an evaluation error: %v", w.Outcome, err))
		case !w.Error && pd.Outcome != w.Outcome:
			r.Failures = append(r.Failures, fmt.Sprintf("want outcome %s, got %s", w.Outcome, pd.Outcome))
		}
		if w.Rule != "" && rule != w.Rule {
			r.Failures = append(r.Failures, fmt.Sprintf("want rule %q, got %q", w.Rule, rule))
		}
		if err == nil {
			if w.Reason != "" && pd.Reason != w.Reason {
				r.Failures = append(r.Failures, fmt.Sprintf("want reason %q, got %q", w.Reason, pd.Reason))
			}
			if w.Kind != "" && pd.Kind != w.Kind {
				r.Failures = append(r.Failures, fmt.Sprintf("want kind %q, got %q", w.Kind, pd.Kind))
			}
			for _, f := range []struct {
				what      string
				want, got json.RawMessage
			}{{"presentation", w.Presentation, pd.Presentation}, {"capability", w.Capability, pd.Capability}} {
				if f.want == nil {
					continue
				}
				if !sameJSON(f.want, f.got) {
					r.Failures = append(r.Failures, fmt.Sprintf("want %s %s, got %s", f.what, f.want, orEmpty(f.got)))
				}
			}
		}
		out = append(out, r)
	}
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	if len(b) == 0 {
		return false
	}
	ca, err1 := agentrt.CanonicalJSON(a)
	cb, err2 := agentrt.CanonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func orEmpty(b json.RawMessage) string {
	if len(b) == 0 {
		return "nothing"
	}
	return string(b)
}
