package disclosure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	agentrt "github.com/agentrt/agentrt"
)

// Config is the operator's disclosure configuration. The zero Config
// redacts every secret rule's findings in every tool's outcomes and
// applies no output rule.
type Config struct {
	// Block names secret rules whose finding withholds the whole outcome
	// instead of redacting it in place.
	Block []string `json:"block,omitempty"`
	// Off turns secret rules off for a named tool: tool name to rule ids,
	// "*" for every rule. Nil turns none off.
	Off map[string][]string `json:"off,omitempty"`
	// Output holds each tool's output rule, by tool name. A tool without
	// one has its structure disclosed as it is (secrets still redacted).
	Output map[string]OutputRule `json:"output,omitempty"`
}

// Default is the configuration agentrt builds engines with for the user:
// every secret rule redacts, no rule is off, no output rule applies.
func Default() Config { return Config{} }

// Rules applies a Config. It is safe for concurrent use.
type Rules struct {
	cfg       Config
	detectors []detector
	ids       []string
	output    map[string]compiledRule
	block     map[string]bool
	off       map[string]map[string]bool
}

var _ agentrt.Disclosure = (*Rules)(nil)

// New checks cfg and builds its rules: an unknown rule id in Block or Off,
// a malformed pointer or an unknown Outside is an error naming it.
func New(cfg Config) (*Rules, error) {
	ds, err := detectors()
	if err != nil {
		return nil, err
	}
	r := &Rules{cfg: cfg, detectors: ds, output: map[string]compiledRule{}, block: map[string]bool{}, off: map[string]map[string]bool{}}
	for _, d := range ds {
		r.ids = append(r.ids, d.id)
	}
	known := func(field, id string) error {
		if id == "*" || slices.Contains(r.ids, id) {
			return nil
		}
		return fmt.Errorf("disclosure: %s names the rule %q, which is not one of %v", field, id, r.ids)
	}
	for _, id := range cfg.Block {
		if err := known("Config.Block", id); err != nil || id == "*" {
			if err == nil {
				err = fmt.Errorf("disclosure: Config.Block must name rules, not %q", id)
			}
			return nil, err
		}
		r.block[id] = true
	}
	for tool, ids := range cfg.Off {
		r.off[tool] = map[string]bool{}
		for _, id := range ids {
			if err := known(fmt.Sprintf("Config.Off[%q]", tool), id); err != nil {
				return nil, err
			}
			r.off[tool][id] = true
		}
	}
	for tool, rule := range cfg.Output {
		c, err := compileRule(tool, rule)
		if err != nil {
			return nil, err
		}
		r.output[tool] = c
	}
	return r, nil
}

// RuleIDs lists every secret rule's id, in the order they are tried.
func (r *Rules) RuleIDs() []string { return slices.Clone(r.ids) }

// Describe is the configuration as JSON, for a run's record (the engine
// records it in run.created): the secret rules in force, in the order
// they are tried, and Config's block, off and output.
func (r *Rules) Describe() json.RawMessage {
	b, _ := json.Marshal(struct {
		Rules []string `json:"rules"`
		Config
	}{r.ids, r.cfg})
	return b
}

// Disclose applies the output rule of in's tool to a result's JSON, then
// the secret rules to every string it discloses.
func (r *Rules) Disclose(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
	out := agentrt.DisclosureOutcome{Content: in.Content, Summary: in.Summary, FailureMessage: in.FailureMessage,
		Blocks: slices.Clone(in.Blocks)}
	offFor := r.off[in.Tool.Name]
	active := r.active(in)
	off := func(id string) bool { return offFor["*"] || offFor[id] || !active[id] }
	rule, hasRule := r.output[in.Tool.Name]
	if len(active) == 0 && (!hasRule || in.Kind != agentrt.ObsToolResult) {
		return out, nil // nothing any rule could find or remove
	}
	find := func(f agentrt.DisclosureFinding) {
		if f.Action == agentrt.DisclosureRedacted && r.block[f.Rule] {
			f.Action = agentrt.DisclosureBlocked
			out.Blocked = true
		}
		out.Findings = append(out.Findings, f)
	}
	text := func(ptr, key, s string) string {
		hits := scan(r.detectors, off, key, s)
		for _, h := range hits {
			find(agentrt.DisclosureFinding{Rule: h.rule, Pointer: ptr, Action: agentrt.DisclosureRedacted, Value: h.value})
		}
		return redact(s, hits)
	}
	if root, err := parse(in.Content); err == nil {
		if hasRule && in.Kind == agentrt.ObsToolResult {
			if applyOutput(rule, root, find) {
				out.Blocked = true
			}
		}
		r.leaves(root, "", "", text)
		out.Content = root.bytesOf()
	} else {
		out.Content = json.RawMessage(text("", "", string(in.Content)))
	}
	out.Summary = text("#summary", "", in.Summary)
	out.FailureMessage = text("#failure_message", "", in.FailureMessage)
	for i := range out.Blocks {
		out.Blocks[i].Text = text("#blocks/"+strconv.Itoa(i)+"/text", "", out.Blocks[i].Text)
	}
	if out.Blocked {
		return agentrt.DisclosureOutcome{Blocked: true, Findings: out.Findings}, nil
	}
	return out, nil
}

// active is the set of rules that could find something anywhere in in:
// each detector's necessary condition is tried once on all of in's text,
// so a rule that cannot fire costs one pass, not one per string. JSON
// escapes other than the short ones could hide a match from that pass;
// content holding a \u escape makes every rule active.
func (r *Rules) active(in agentrt.DisclosureInput) map[string]bool {
	all := bytes.Contains(in.Content, []byte(`\u`))
	text := make([]byte, 0, len(in.Content)+len(in.Summary)+len(in.FailureMessage)+2)
	text = append(append(append(append(text, in.Content...), '\n'), in.Summary...), '\n')
	text = append(text, in.FailureMessage...)
	for _, b := range in.Blocks {
		text = append(append(text, '\n'), b.Text...)
	}
	lower := lowerASCII(text)
	act := map[string]bool{}
	for _, d := range r.detectors {
		q, ok := quick[d.id]
		if all || !ok || q(text, lower) {
			act[d.id] = true
		}
	}
	return act
}

// leaves runs fn on every string leaf (and object key's value) of n.
func (r *Rules) leaves(n *node, ptr, key string, fn func(ptr, key, s string) string) {
	switch n.kind {
	case 'o':
		for _, m := range n.members {
			r.leaves(m.val, ptr+"/"+escapeToken(m.key), m.key, fn)
		}
	case 'a':
		for i, v := range n.items {
			r.leaves(v, ptr+"/"+strconv.Itoa(i), "", fn)
		}
	case 's':
		n.str = fn(ptr, key, n.str)
	}
}
