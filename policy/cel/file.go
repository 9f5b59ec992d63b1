package cel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	agentrt "github.com/agentrt/agentrt"
)

// Bounds on a policy file, so loading it is bounded too.
const (
	// MaxFileBytes is the largest policy file Load reads.
	MaxFileBytes = 4 << 20
	// MaxRules is the most rules a file may hold.
	MaxRules = 10000
	// MaxExpressionBytes bounds one CEL expression.
	MaxExpressionBytes = 4096
	// MaxNameBytes bounds a rule name, a kind, a glob and a map key.
	MaxNameBytes = 128
	// MaxReasonBytes bounds a reason.
	MaxReasonBytes = 1024
	// MaxApprovalFields bounds the keys of a presentation or capability.
	MaxApprovalFields = 64
)

// Defaults for the file's limits.
const (
	// DefaultCostLimit is the CEL cost one expression may spend on one
	// request, unless the file's limits.cost says otherwise.
	DefaultCostLimit = 100_000
	// DefaultArgsBytes is the largest request (as PolicyJSON) the
	// expressions are handed, unless the file's limits.args_bytes says
	// otherwise. A larger request is a policy error.
	DefaultArgsBytes = 1 << 20
	// maxCostLimit and maxArgsBytes bound what a file may ask for.
	maxCostLimit = 100_000_000
	maxArgsBytes = 16 << 20
)

// ruleSpec is one rule as the file says it, before compiling.
type ruleSpec struct {
	name                     string
	line, col                int
	tools                    []string
	sideEffects              []agentrt.SideEffect
	when                     *node // kindString, nil when absent
	outcome                  agentrt.PolicyOutcome
	reason                   string
	kind                     string
	ttl                      time.Duration
	presentation, capability []fieldSpec
	requireSignature         bool
	requirement              *agentrt.Requirement
	isDefault                bool
}

type fieldSpec struct {
	key  string
	expr *node
}

// fileSpec is a whole policy file as it says it.
type fileSpec struct {
	rules     []ruleSpec
	def       ruleSpec
	costLimit uint64
	argsBytes int
}

// decoder turns a tree into a fileSpec, refusing every key it does not
// know and every value of the wrong kind, naming where.
type decoder struct {
	rule string // the rule being decoded, for errors
}

func (d *decoder) errAt(n *node, field, format string, args ...any) error {
	e := &FileError{Rule: d.rule, Field: field, Reason: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.line, n.col
	}
	return e
}

// object checks n is a map whose keys are all in allowed.
func (d *decoder) object(n *node, field string, allowed ...string) error {
	if n.kind != kindObject {
		return d.errAt(n, field, "must be a map, not %s", n.kind)
	}
	for _, k := range n.keys {
		ok := false
		for _, a := range allowed {
			if k.str == a {
				ok = true
				break
			}
		}
		if !ok {
			return d.errAt(k, field, "unknown field %q (known: %s)", k.str, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (d *decoder) str(n *node, field string, max int) (string, error) {
	if n.kind != kindString {
		return "", d.errAt(n, field, "must be a string, not %s", n.kind)
	}
	if len(n.str) > max {
		return "", d.errAt(n, field, "is %d bytes; at most %d", len(n.str), max)
	}
	return n.str, nil
}

// name checks a name-like string: non-empty, printable, no spaces at
// either end.
func (d *decoder) name(n *node, field string) (string, error) {
	s, err := d.str(n, field, MaxNameBytes)
	if err != nil {
		return "", err
	}
	if s == "" || strings.TrimSpace(s) != s {
		return "", d.errAt(n, field, "must be non-empty, without spaces at either end")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return "", d.errAt(n, field, "must be printable")
		}
	}
	return s, nil
}

func (d *decoder) strings(n *node, field string) ([]string, error) {
	if n.kind != kindArray {
		return nil, d.errAt(n, field, "must be a list, not %s", n.kind)
	}
	if len(n.items) == 0 {
		return nil, d.errAt(n, field, "is empty, so the rule could never match; leave it out to match any")
	}
	out := make([]string, 0, len(n.items))
	for _, it := range n.items {
		s, err := d.name(it, field)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (d *decoder) count(n *node, field string, max uint64) (uint64, error) {
	if n.kind != kindNumber {
		return 0, d.errAt(n, field, "must be a number, not %s", n.kind)
	}
	v, err := strconv.ParseUint(n.str, 10, 64)
	if err != nil || v == 0 || v > max {
		return 0, d.errAt(n, field, "must be a whole number from 1 to %d, got %s", max, n.str)
	}
	return v, nil
}

func decodeFile(root *node) (*fileSpec, error) {
	d := &decoder{}
	if err := d.object(root, "", "rules", "default", "limits"); err != nil {
		return nil, err
	}
	fs := &fileSpec{costLimit: DefaultCostLimit, argsBytes: DefaultArgsBytes}
	if lim, ok := root.get("limits"); ok {
		if err := d.object(lim, "limits", "cost", "args_bytes"); err != nil {
			return nil, err
		}
		if n, ok := lim.get("cost"); ok {
			v, err := d.count(n, "limits.cost", maxCostLimit)
			if err != nil {
				return nil, err
			}
			fs.costLimit = v
		}
		if n, ok := lim.get("args_bytes"); ok {
			v, err := d.count(n, "limits.args_bytes", maxArgsBytes)
			if err != nil {
				return nil, err
			}
			fs.argsBytes = int(v)
		}
	}
	rules, ok := root.get("rules")
	if !ok {
		return nil, d.errAt(root, "rules", "is required (a list of rules, first match wins)")
	}
	if rules.kind != kindArray {
		return nil, d.errAt(rules, "rules", "must be a list, not %s", rules.kind)
	}
	if len(rules.items) > MaxRules {
		return nil, d.errAt(rules, "rules", "holds %d rules; at most %d", len(rules.items), MaxRules)
	}
	seen := map[string]*node{}
	for i, rn := range rules.items {
		d.rule = ""
		if rn.kind != kindObject {
			return nil, d.errAt(rn, fmt.Sprintf("rules[%d]", i), "must be a map, not %s", rn.kind)
		}
		nn, ok := rn.get("name")
		if !ok {
			return nil, d.errAt(rn, fmt.Sprintf("rules[%d]", i), "has no name; every rule needs one")
		}
		name, err := d.name(nn, fmt.Sprintf("rules[%d].name", i))
		if err != nil {
			return nil, err
		}
		if name == defaultRule {
			return nil, d.errAt(nn, "name", "%q is the name of the default outcome; choose another", defaultRule)
		}
		if name == argumentsRule {
			return nil, d.errAt(nn, "name", "%q names the refusal of arguments the policy cannot read exactly; choose another", argumentsRule)
		}
		if first, dup := seen[name]; dup {
			return nil, d.errAt(nn, "name", "the rule name %q is used twice (first at line %d)", name, first.line)
		}
		seen[name] = nn
		d.rule = name
		r, err := d.rule1(rn, false)
		if err != nil {
			return nil, err
		}
		fs.rules = append(fs.rules, r)
	}
	d.rule = defaultRule
	dn, ok := root.get("default")
	if !ok {
		return nil, (&decoder{}).errAt(root, "default", "is required: the outcome when no rule matches (there is no implicit allow)")
	}
	def, err := d.rule1(dn, true)
	if err != nil {
		return nil, err
	}
	fs.def = def
	return fs, nil
}

const defaultRule = "default"

var ruleFields = []string{"name", "match", "when", "outcome", "reason", "kind", "ttl", "require_signature", "stages", "presentation", "capability"}
var defaultFields = []string{"outcome", "reason", "kind", "ttl", "require_signature", "stages", "presentation", "capability"}

func (d *decoder) rule1(n *node, isDefault bool) (ruleSpec, error) {
	r := ruleSpec{name: d.rule, line: n.line, col: n.col, isDefault: isDefault}
	allowed := ruleFields
	if isDefault {
		allowed = defaultFields
	}
	if err := d.object(n, "", allowed...); err != nil {
		return r, err
	}
	if m, ok := n.get("match"); ok {
		if err := d.match(m, &r); err != nil {
			return r, err
		}
	}
	if w, ok := n.get("when"); ok {
		if _, err := d.str(w, "when", MaxExpressionBytes); err != nil {
			return r, err
		}
		r.when = w
	}
	if err := d.outcome(n, &r); err != nil {
		return r, err
	}
	if err := d.approvalFields(n, &r); err != nil {
		return r, err
	}
	if r.outcome == agentrt.RequireApproval && r.kind == "" {
		r.kind = r.name
	}
	return r, nil
}

// match decodes a rule's match: the tool globs and side-effect classes.
func (d *decoder) match(m *node, r *ruleSpec) error {
	if err := d.object(m, "match", "tools", "side_effects"); err != nil {
		return err
	}
	if t, ok := m.get("tools"); ok {
		globs, err := d.strings(t, "match.tools")
		if err != nil {
			return err
		}
		r.tools = globs
	}
	s, ok := m.get("side_effects")
	if !ok {
		return nil
	}
	classes, err := d.strings(s, "match.side_effects")
	if err != nil {
		return err
	}
	for j, c := range classes {
		se := agentrt.SideEffect(c)
		if !knownSideEffect(se) {
			return d.errAt(s.items[j], "match.side_effects", "unknown side effect %q (known: read_only, local_mutation, remote_mutation, destructive)", c)
		}
		r.sideEffects = append(r.sideEffects, se)
	}
	return nil
}

// outcome decodes a rule's required outcome and its optional reason.
func (d *decoder) outcome(n *node, r *ruleSpec) error {
	on, ok := n.get("outcome")
	if !ok {
		return d.errAt(n, "outcome", "is required (allow, deny, abort or require_approval)")
	}
	o, err := d.str(on, "outcome", MaxNameBytes)
	if err != nil {
		return err
	}
	r.outcome = agentrt.PolicyOutcome(o)
	if !r.outcome.Valid() {
		return d.errAt(on, "outcome", "unknown outcome %q (allow, deny, abort or require_approval)", o)
	}
	if rn, ok := n.get("reason"); ok {
		if r.reason, err = d.str(rn, "reason", MaxReasonBytes); err != nil {
			return err
		}
	}
	return nil
}

// approvalOnly returns the field key of n, refusing it unless the rule's
// outcome is require_approval.
func (d *decoder) approvalOnly(n *node, r *ruleSpec, key string) (*node, bool, error) {
	v, ok := n.get(key)
	if ok && r.outcome != agentrt.RequireApproval {
		return nil, false, d.errAt(v, key, "is only for outcome require_approval, not %s", r.outcome)
	}
	return v, ok, nil
}

// approvalFields decodes the fields only require_approval takes: kind,
// ttl, require_signature, stages, presentation and capability.
func (d *decoder) approvalFields(n *node, r *ruleSpec) error {
	if v, ok, err := d.approvalOnly(n, r, "kind"); err != nil {
		return err
	} else if ok {
		if r.kind, err = d.name(v, "kind"); err != nil {
			return err
		}
	}
	if v, ok, err := d.approvalOnly(n, r, "ttl"); err != nil {
		return err
	} else if ok {
		if r.ttl, err = d.ttl(v); err != nil {
			return err
		}
	}
	if v, ok, err := d.approvalOnly(n, r, "require_signature"); err != nil {
		return err
	} else if ok {
		if v.kind != kindBool {
			return d.errAt(v, "require_signature", "must be true or false, not %s", v.kind)
		}
		r.requireSignature = v.b
	}
	if v, ok, err := d.approvalOnly(n, r, "stages"); err != nil {
		return err
	} else if ok {
		if r.requirement, err = d.stages(v); err != nil {
			return err
		}
	}
	for _, key := range []string{"presentation", "capability"} {
		v, ok, err := d.approvalOnly(n, r, key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		fields, err := d.exprFields(v, key)
		if err != nil {
			return err
		}
		if key == "presentation" {
			r.presentation = fields
		} else {
			r.capability = fields
		}
	}
	return nil
}

// ttl decodes an approval's time to live, a positive duration.
func (d *decoder) ttl(v *node) (time.Duration, error) {
	s, err := d.str(v, "ttl", MaxNameBytes)
	if err != nil {
		return 0, err
	}
	ttl, perr := time.ParseDuration(s)
	if perr != nil || ttl <= 0 {
		return 0, d.errAt(v, "ttl", "must be a positive duration such as 15m or 24h, got %q", s)
	}
	return ttl, nil
}

// exprFields decodes a presentation or capability: a map of names to CEL
// expressions, sorted by name.
func (d *decoder) exprFields(v *node, key string) ([]fieldSpec, error) {
	if v.kind != kindObject {
		return nil, d.errAt(v, key, "must be a map of names to CEL expressions, not %s", v.kind)
	}
	if len(v.keys) > MaxApprovalFields {
		return nil, d.errAt(v, key, "has %d fields; at most %d", len(v.keys), MaxApprovalFields)
	}
	var fields []fieldSpec
	for i, k := range v.keys {
		field := key + "." + k.str
		if _, err := d.name(k, key); err != nil {
			return nil, err
		}
		if _, err := d.str(v.vals[i], field, MaxExpressionBytes); err != nil {
			return nil, err
		}
		fields = append(fields, fieldSpec{key: k.str, expr: v.vals[i]})
	}
	sort.Slice(fields, func(a, b int) bool { return fields[a].key < fields[b].key })
	return fields, nil
}

func knownSideEffect(se agentrt.SideEffect) bool {
	switch se {
	case agentrt.ReadOnly, agentrt.LocalMutation, agentrt.RemoteMutation, agentrt.Destructive:
		return true
	}
	return false
}

// canonicalID is the policy id: the SHA-256 of the canonical JSON of the
// file as it decodes, with its limits written out, so the same rules in
// YAML or JSON, laid out or commented differently, share an id, and a
// changed default limit changes it.
func canonicalID(root *node, fs *fileSpec) (string, error) {
	var b bytes.Buffer
	// The limits are written out with their defaults, so naming a
	// default does not change the id; the rest of the file is as written.
	rest := &node{kind: kindObject}
	for i, k := range root.keys {
		if k.str != "limits" {
			rest.keys, rest.vals = append(rest.keys, k), append(rest.vals, root.vals[i])
		}
	}
	b.WriteString(`{"format":"agentrt.celpolicy/1","file":`)
	rest.toJSON(&b)
	lim, _ := json.Marshal(struct {
		Cost      uint64 `json:"cost"`
		ArgsBytes int    `json:"args_bytes"`
	}{fs.costLimit, fs.argsBytes})
	b.WriteString(`,"limits":`)
	b.Write(lim)
	b.WriteByte('}')
	h, err := agentrt.ContentHash(b.Bytes())
	if err != nil {
		return "", err
	}
	return "cel/sha256:" + h, nil
}
