package cel

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	agentrt "github.com/agentrt/agentrt"
)

// Policy is a compiled policy file: an ordered list of rules and a default
// outcome. The first rule that matches a request decides it; when none
// does, the default does. It is safe for concurrent use.
type Policy struct {
	id        string
	rules     []*rule
	def       *rule
	argsBytes int
	usesHash  bool
	usesArgs  bool
	// hashes caches each tool's spec hash by name, checked against the
	// whole spec before use.
	hashes sync.Map // string -> *specHashEntry
}

var _ agentrt.IdentifiedPolicy = (*Policy)(nil)

// Load reads and compiles the policy file at path. The file must be a
// regular file (not a symbolic link) owned by the effective user and
// writable by no one else, and at most MaxFileBytes. Its format follows its
// name: .json is JSON, .yaml or .yml is YAML. A file that does not parse
// strictly or compile is refused with a *FileError naming the rule, the
// line and the column.
func Load(path string) (*Policy, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := readOwned(path, MaxFileBytes)
	if err != nil {
		if fe, ok := err.(*FileError); ok {
			fe.Path = path
		}
		return nil, err
	}
	p, err := Parse(data, f)
	if fe, ok := err.(*FileError); ok {
		fe.Path = path
	}
	return p, err
}

// FormatOf is the format a policy file's name says it is in.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return JSON, nil
	case ".yaml", ".yml":
		return YAML, nil
	}
	return "", &FileError{Path: path, Reason: "a policy file's name must end in .json, .yaml or .yml"}
}

// Parse compiles a policy file held in memory; Load is Parse on a file read
// owner-only. Every expression is compiled and type-checked against the
// declared variables before Parse returns.
func Parse(data []byte, f Format) (*Policy, error) {
	if len(data) > MaxFileBytes {
		return nil, &FileError{Reason: fmt.Sprintf("the file is %d bytes; a policy file is at most %d", len(data), MaxFileBytes)}
	}
	root, err := parseTree(data, f)
	if err != nil {
		return nil, err
	}
	fs, err := decodeFile(root)
	if err != nil {
		return nil, err
	}
	id, err := canonicalID(root, fs)
	if err != nil {
		return nil, &FileError{Reason: err.Error()}
	}
	rules, def, err := compileFile(fs, data)
	if err != nil {
		return nil, err
	}
	p := &Policy{id: id, rules: rules, def: def, argsBytes: fs.argsBytes}
	for _, r := range append(rules[:len(rules):len(rules)], def) {
		for _, ex := range r.exprs() {
			p.usesHash = p.usesHash || ex.usesHash
			p.usesArgs = p.usesArgs || ex.usesArgs
		}
	}
	return p, nil
}

// SignedGrantRules names, in file order, the rules (and "default") whose
// require_approval outcome needs a signed grant (require_signature: true).
func (p *Policy) SignedGrantRules() []string {
	var out []string
	for _, r := range append(p.rules[:len(p.rules):len(p.rules)], p.def) {
		if r.decision.RequireSignature {
			out = append(out, r.name)
		}
	}
	return out
}

// PolicyID is "cel/sha256:" and the hash of the file's canonical form, so
// the events and Recheck name exactly which file decided.
func (p *Policy) PolicyID() string { return p.id }

// Evaluate judges a request: the first rule whose match and when hold
// decides it, else the default. An expression that fails or uses up its
// cost is an *EvalError, which the runtime treats as a policy failure: the
// run ends, and nothing is allowed.
func (p *Policy) Evaluate(_ context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
	act := p.newActivation(req, view)
	pd, _, err := p.decide(act, nil)
	return pd, err
}

// RuleTrace is what Explain found about one rule.
type RuleTrace struct {
	Rule string
	// Matched says the request is among the rule's tools and side
	// effects.
	Matched bool
	// When is the rule's when expression, empty when it has none.
	When string
	// Result is "true", "false", "not evaluated" (the match failed or an
	// earlier rule decided), or "error: ..." .
	Result string
}

// Explanation is how a policy reached its decision about one request.
type Explanation struct {
	// Rule is the name of the rule that decided, or "default".
	Rule     string
	Decision agentrt.PolicyDecision
	// Rules has one entry per rule, in file order, and the default last.
	Rules []RuleTrace
	// Err is the evaluation error that ended the policy's answer, if any.
	Err error
}

// Explain judges a request as Evaluate does and says, rule by rule, what
// was checked.
func (p *Policy) Explain(req agentrt.ToolRequest, view agentrt.RunView) Explanation {
	act := p.newActivation(req, view)
	var tr []RuleTrace
	pd, r, err := p.decide(act, &tr)
	ex := Explanation{Decision: pd, Rules: tr, Err: err}
	if r != nil {
		ex.Rule = r.name
	}
	return ex
}

// Decide is Evaluate that also names the rule that decided ("default" when
// none matched), for tools that show which rule spoke.
func (p *Policy) Decide(req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, string, error) {
	act := p.newActivation(req, view)
	pd, r, err := p.decide(act, nil)
	name := ""
	if r != nil {
		name = r.name
	}
	return pd, name, err
}

// argumentsRule names the refusal of a request whose arguments hold a
// number no expression could compare exactly.
const argumentsRule = "(arguments)"

var argumentsRefusal = &rule{name: argumentsRule}

func (p *Policy) decide(act *activation, trace *[]RuleTrace) (agentrt.PolicyDecision, *rule, error) {
	// A number a double cannot hold is refused before any rule runs: a
	// rule would compare the double, the tool would get the literal. The
	// refusal is a deny, recorded as any denied request is, and the model
	// is told why.
	if p.usesArgs {
		act.ResolveName(varArgs)
		var ie *InexactNumberError
		if errors.As(act.argsErr, &ie) {
			pd := agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "invalid arguments: " + ie.Error()}
			if trace != nil {
				*trace = append(*trace, RuleTrace{Rule: argumentsRule, Matched: true, Result: "refused: " + ie.Error()})
			}
			return pd, argumentsRefusal, nil
		}
	}
	var decided *rule
	for _, r := range p.rules {
		if decided != nil {
			if trace != nil {
				*trace = append(*trace, RuleTrace{Rule: r.name, Matched: r.matches(act.req.Spec), When: r.whenSrc(), Result: "not evaluated"})
			}
			continue
		}
		matched := r.matches(act.req.Spec)
		if !matched {
			if trace != nil {
				*trace = append(*trace, RuleTrace{Rule: r.name, When: r.whenSrc(), Result: "not evaluated"})
			}
			continue
		}
		ok := true
		if r.when != nil {
			var err error
			ok, err = act.evalBool(r, r.when)
			if err != nil {
				if trace != nil {
					*trace = append(*trace, RuleTrace{Rule: r.name, Matched: true, When: r.whenSrc(), Result: "error: " + err.Error()})
				}
				return agentrt.PolicyDecision{}, r, err
			}
		}
		if trace != nil {
			res := "true"
			if !ok {
				res = "false"
			}
			if r.when == nil {
				res = "true (no when)"
			}
			*trace = append(*trace, RuleTrace{Rule: r.name, Matched: true, When: r.whenSrc(), Result: res})
		}
		if ok {
			decided = r
			if trace == nil {
				break
			}
		}
	}
	if decided == nil {
		decided = p.def
	}
	if trace != nil {
		res := "not evaluated"
		if decided == p.def {
			res = "true (no rule matched)"
		}
		*trace = append(*trace, RuleTrace{Rule: defaultRule, Matched: decided == p.def, Result: res})
	}
	pd, err := act.outcome(decided)
	return pd, decided, err
}

func (r *rule) whenSrc() string {
	if r.when == nil {
		return ""
	}
	return r.when.src
}

func (r *rule) exprs() []*expr {
	var out []*expr
	if r.when != nil {
		out = append(out, r.when)
	}
	for _, f := range r.presentation {
		out = append(out, f.ex)
	}
	for _, f := range r.capability {
		out = append(out, f.ex)
	}
	return out
}

// matches reports whether the spec is among the rule's tools and side
// effects; an empty list matches any.
func (r *rule) matches(spec agentrt.ToolSpec) bool {
	if len(r.sideEffects) > 0 {
		ok := false
		for _, se := range r.sideEffects {
			if se == spec.SideEffect {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(r.tools) == 0 {
		return true
	}
	for _, g := range r.tools {
		if globMatch(g, spec.Name) {
			return true
		}
	}
	return false
}
