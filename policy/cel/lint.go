package cel

import (
	"fmt"
	"strings"

	agentrt "github.com/agentrt/agentrt"
)

// Warning is something check reports about a file that compiles: a rule
// that can never match, a rule an earlier one shadows, or a default that
// allows.
type Warning struct {
	Rule         string
	Line, Column int
	Message      string
}

func (w Warning) String() string {
	return fmt.Sprintf("%d:%d: rule %q: %s", w.Line, w.Column, w.Rule, w.Message)
}

// Warnings lists what check warns about, in file order. It is sound but not
// complete: a rule it calls shadowed is never reached, but a rule it does
// not mention may still be unreachable for reasons only the expressions
// know.
func (p *Policy) Warnings() []Warning {
	var out []Warning
	for i, r := range p.rules {
		if r.when != nil && r.when.constant != nil && !*r.when.constant {
			out = append(out, Warning{Rule: r.name, Line: r.line, Column: r.col, Message: "can never match: its when is always false"})
			continue
		}
		for _, a := range p.rules[:i] {
			if a.unconditional() && a.covers(r) {
				out = append(out, Warning{Rule: r.name, Line: r.line, Column: r.col,
					Message: fmt.Sprintf("is never reached: rule %q (line %d) matches every request it matches and has no condition", a.name, a.line)})
				break
			}
		}
	}
	for _, a := range p.rules {
		if a.unconditional() && len(a.tools) == 0 && len(a.sideEffects) == 0 {
			out = append(out, Warning{Rule: defaultRule, Line: p.def.line, Column: p.def.col,
				Message: fmt.Sprintf("is never reached: rule %q (line %d) matches every request", a.name, a.line)})
			break
		}
	}
	if p.def.decision.Outcome == agentrt.Allow {
		out = append(out, Warning{Rule: defaultRule, Line: p.def.line, Column: p.def.col,
			Message: "allows every request no rule matches; a default of deny fails closed"})
	}
	return out
}

// unconditional reports a rule with no when, or a when that is always true.
func (r *rule) unconditional() bool {
	return r.when == nil || (r.when.constant != nil && *r.when.constant)
}

// covers reports whether every request b matches, a matches too.
func (a *rule) covers(b *rule) bool {
	if len(a.sideEffects) > 0 {
		if len(b.sideEffects) == 0 {
			return false
		}
		for _, se := range b.sideEffects {
			found := false
			for _, x := range a.sideEffects {
				found = found || x == se
			}
			if !found {
				return false
			}
		}
	}
	if len(a.tools) == 0 {
		return true
	}
	if len(b.tools) == 0 {
		return false
	}
	for _, q := range b.tools {
		found := false
		for _, pat := range a.tools {
			found = found || patternCovers(pat, q)
		}
		if !found {
			return false
		}
	}
	return true
}

// patternCovers reports whether every name q matches, p matches too, in the
// cases that can be told without search: equal patterns, a literal q, and
// p a literal prefix then * that q starts with.
func patternCovers(p, q string) bool {
	switch {
	case p == q || p == "*":
		return true
	case !strings.ContainsAny(q, "*?"):
		return globMatch(p, q)
	case strings.HasSuffix(p, "*") && !strings.ContainsAny(p[:len(p)-1], "*?"):
		return strings.HasPrefix(q, p[:len(p)-1])
	}
	return false
}
