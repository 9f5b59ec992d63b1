package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// Rule is the operator's word on one tool. Without a rule a tool is never
// registered; the server's annotations can refuse a rule, never relax it.
type Rule struct {
	// SideEffect is the tool's class; required.
	SideEffect agentrt.SideEffect
	// Timeout bounds one call. Zero means Server.DefaultTimeout; with both
	// zero the tool is refused.
	Timeout time.Duration
	// Terminal tools complete the run with their content.
	Terminal bool
	// Description, when set, replaces the server's description in what
	// the model sees. The pin still covers the server's.
	Description string
	// Deny names top-level parameters the model may not set: they are
	// removed from the schema the model sees and a call that sets one fails.
	Deny []string
	// Fixed parameters are set by the operator: removed from the schema,
	// injected into every call, and a call that sets one fails. They sit
	// outside the approval hash, which binds what the model asked for.
	Fixed map[string]json.RawMessage
	// Rename replaces <server>_<tool> as the name the model sees.
	Rename string
	// AllowHintMismatch registers the tool even though the server's
	// annotations dispute SideEffect; the report records it.
	AllowHintMismatch bool
}

// Rules are keyed by the server's own tool names.
type Rules map[string]Rule

// Report says what Load did with every tool the server offered or the
// manifest pinned. The fields hold what was received; String escapes it.
type Report struct {
	Server string `json:"server"`
	// Connection is shared by the registered tools; the caller closes it.
	// It is nil when nothing registered, unless the server offers no tool
	// at all and the manifest pins none.
	Connection   *Connection    `json:"-"`
	Registered   []Registration `json:"registered"`
	Refused      []Refusal      `json:"refused"`
	Unpinned     []string       `json:"unpinned"`
	Unclassified []string       `json:"unclassified"`
}

// Registration is one tool registered.
type Registration struct {
	Tool       string             `json:"tool"`
	Name       string             `json:"name"`
	SideEffect agentrt.SideEffect `json:"side_effect"`
	// HintMismatch, when set, is the dispute AllowHintMismatch overrode.
	HintMismatch string `json:"hint_mismatch,omitempty"`
}

// Refusal is one pinned, classified tool refused, with the reason.
type Refusal struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// String prints one line per tool. Every value a server chose passes
// through trace.Sanitize, so a name with a newline or an escape sequence
// cannot forge a line.
func (r *Report) String() string {
	var b strings.Builder
	s := trace.Sanitize
	fmt.Fprintf(&b, "server %s\n", s(r.Server))
	for _, g := range r.Registered {
		fmt.Fprintf(&b, "registered %s as %s (%s)", s(g.Tool), s(g.Name), g.SideEffect)
		if g.HintMismatch != "" {
			fmt.Fprintf(&b, " [hint mismatch allowed: %s]", s(g.HintMismatch))
		}
		b.WriteByte('\n')
	}
	for _, f := range r.Refused {
		fmt.Fprintf(&b, "refused %s: %s\n", s(f.Tool), s(f.Reason))
	}
	for _, u := range r.Unclassified {
		fmt.Fprintf(&b, "unclassified %s: no rule\n", s(u))
	}
	for _, u := range r.Unpinned {
		fmt.Fprintf(&b, "unpinned %s: not in the manifest\n", s(u))
	}
	return b.String()
}

// Load connects to srv and registers each tool that is pinned in m, has a
// rule in rules, and passes every check; each refused tool is in the
// report with its reason, and the others still register. Connecting,
// listing and every check fall inside srv.ConnectTimeout. A server that
// offers no tool at all, under a manifest that pins none, loads with no
// tools and its connection (it may still have prompts or resources).
// Otherwise, when nothing registers, the connection is closed and the
// error wraps ErrNoTools.
func Load(ctx context.Context, srv Server, m *Manifest, rules Rules) ([]agentrt.Tool, *Report, error) {
	if err := srv.validate(); err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, nil, fmt.Errorf("mcp: server %q: no manifest; run Pin first", srv.Name)
	}
	if m.Server != srv.Name {
		return nil, nil, fmt.Errorf("mcp: the manifest pins server %q, not %q", trace.Sanitize(m.Server), srv.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		if _, ok := m.Tools[name]; !ok {
			return nil, nil, fmt.Errorf("mcp: server %q: the rule for %q names a tool the manifest does not pin", srv.Name, trace.Sanitize(name))
		}
	}
	type out struct {
		tools []agentrt.Tool
		rep   *Report
	}
	o, err := withTimeout(ctx, &srv, "load", func(ctx context.Context, opened func(*Connection)) (out, error) {
		c, err := connect(ctx, &srv)
		if err != nil {
			return out{}, err
		}
		opened(c)
		l, err := c.list(ctx)
		if err != nil {
			c.Close()
			return out{}, c.phaseError(ctx, "list tools", err)
		}
		tools, rep := c.register(l, m, rules)
		if h := loadHook.Load(); h != nil {
			(*h)(ctx)
		}
		if len(tools) == 0 && (len(l.tools) > 0 || len(m.Tools) > 0) {
			c.Close()
			return out{nil, rep}, fmt.Errorf("mcp: server %q: %w", srv.Name, ErrNoTools)
		}
		c.watch.start(l, tools)
		rep.Connection = c
		return out{tools, rep}, nil
	})
	return o.tools, o.rep, err
}

// loadHook, set only by tests, runs inside Load's deadline after the checks.
var loadHook atomic.Pointer[func(ctx context.Context)]

// register runs the checks on every tool and builds the ones that pass.
func (c *Connection) register(l *listing, m *Manifest, rules Rules) ([]agentrt.Tool, *Report) {
	rep := &Report{Server: c.srv.Name}
	for _, t := range l.tools {
		if _, ok := m.Tools[t.Name]; !ok {
			rep.Unpinned = append(rep.Unpinned, t.Name)
		}
	}
	var tools []agentrt.Tool
	taken := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(m.Tools)) {
		rule, ok := rules[name]
		if !ok {
			rep.Unclassified = append(rep.Unclassified, name)
			continue
		}
		t, mismatch, err := c.build(name, m.Tools[name], l.byName[name], rule)
		if err == nil {
			if prev, dup := taken[t.spec.Name]; dup {
				err = fmt.Errorf("its name %q is already taken by %q", t.spec.Name, prev)
			}
		}
		if err != nil {
			rep.Refused = append(rep.Refused, Refusal{Tool: name, Reason: err.Error()})
			continue
		}
		taken[t.spec.Name] = name
		tools = append(tools, t)
		rep.Registered = append(rep.Registered, Registration{Tool: name, Name: t.spec.Name, SideEffect: rule.SideEffect, HintMismatch: mismatch})
	}
	return tools, rep
}

// build checks one pinned, classified tool against what the server now
// presents and the operator's rule, in order, and returns the tool or the
// first reason to refuse it.
func (c *Connection) build(name string, pin PinnedTool, live *liveTool, rule Rule) (*tool, string, error) {
	if err := stillAsPinned(pin, live); err != nil {
		return nil, "", err
	}
	mismatch, err := ruleHolds(pin, live, rule)
	if err != nil {
		return nil, "", err
	}
	timeout := rule.Timeout
	if timeout == 0 {
		timeout = c.srv.DefaultTimeout
	}
	if timeout <= 0 {
		return nil, "", fmt.Errorf("no timeout: the rule names none and the server has no DefaultTimeout")
	}
	model := rule.Rename
	if model == "" {
		model = c.srv.Name + "_" + name
	}
	if !nameRE.MatchString(model) {
		return nil, "", fmt.Errorf("the name %q is not one every provider accepts (%s)", model, nameRE)
	}
	doc, outDoc, err := liveSchemas(live)
	if err != nil {
		return nil, "", err
	}
	fixed, hidden, err := fixedArgs(rule)
	if err != nil {
		return nil, "", err
	}
	schema, err := restrict(doc, live.InputSchema, hidden)
	if err != nil {
		return nil, "", err
	}
	desc := live.Description
	if rule.Description != "" {
		desc = rule.Description
	}
	spec := agentrt.ToolSpec{Name: model, Description: desc, InputSchema: schema, SideEffect: rule.SideEffect, Timeout: timeout, Terminal: rule.Terminal}
	if _, err := agentrt.CompileTool(spec); err != nil {
		return nil, "", fmt.Errorf("the runtime refuses it: %v", err)
	}
	t := &tool{conn: c, name: name, spec: spec, deny: rule.Deny, fixed: fixed, pin: pin}
	if outDoc != nil {
		if t.out, err = compileOutput(live.OutputSchema); err != nil {
			return nil, "", fmt.Errorf("its output schema does not compile: %v", err)
		}
	}
	return t, mismatch, nil
}

// stillAsPinned refuses a tool the server no longer offers, or offers with
// a problem, another schema or description than was pinned, or only as a
// task.
func stillAsPinned(pin PinnedTool, live *liveTool) error {
	switch {
	case live == nil:
		return fmt.Errorf("the server no longer offers it")
	case live.problem != "":
		return fmt.Errorf("%s", live.problem)
	case live.SchemaHash != pin.SchemaHash:
		return fmt.Errorf("its input schema changed since it was pinned (sha256 %s, pinned %s)", short(live.SchemaHash), short(pin.SchemaHash))
	case live.DescriptionHash != pin.DescriptionHash:
		return fmt.Errorf("its description changed since it was pinned; a description is model input, so review it and pin again")
	case live.OutputSchemaHash != pin.OutputSchemaHash:
		return fmt.Errorf("its output schema changed since it was pinned")
	case live.TaskSupport == "required":
		return fmt.Errorf("it requires task-based execution (execution.taskSupport is \"required\"), which this adapter does not run")
	}
	return nil
}

// ruleHolds refuses a rule without a side-effect class, or one the
// server's annotations (pinned, then live) dispute unless the rule allows
// it; mismatch is the dispute allowed.
func ruleHolds(pin PinnedTool, live *liveTool, rule Rule) (mismatch string, err error) {
	if !rule.SideEffect.Valid() {
		return "", fmt.Errorf("its rule names no side-effect class (read_only, local_mutation, remote_mutation or destructive), got %q", rule.SideEffect)
	}
	mismatch = hintMismatch(rule.SideEffect, pin.Annotations)
	if mismatch == "" {
		if mm := hintMismatch(rule.SideEffect, live.Annotations); mm != "" {
			mismatch = "the server now says: " + mm
		}
	}
	if mismatch != "" && !rule.AllowHintMismatch {
		return "", fmt.Errorf("the server's annotations dispute the rule: %s (set AllowHintMismatch to register it anyway)", mismatch)
	}
	return mismatch, nil
}

// liveSchemas decodes the tool's input schema, which must be an object
// schema, and its output schema if any; neither may reach outside itself.
func liveSchemas(live *liveTool) (doc, outDoc any, err error) {
	doc, err = decodeExact(live.InputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("its input schema cannot be read: %v", err)
	}
	if !isObjectSchema(doc) {
		return nil, nil, fmt.Errorf("its input schema is not an object schema (\"type\":\"object\")")
	}
	if where, ok := outsideRef(doc); ok {
		return nil, nil, fmt.Errorf("its input schema reaches outside itself: %s could make the schema compiler read outside it", where)
	}
	if live.OutputSchema == nil {
		return doc, nil, nil
	}
	if outDoc, err = decodeExact(live.OutputSchema); err != nil {
		return nil, nil, fmt.Errorf("its output schema cannot be read: %v", err)
	}
	if where, ok := outsideRef(outDoc); ok {
		return nil, nil, fmt.Errorf("its output schema reaches outside itself: %s could make the schema compiler read outside it", where)
	}
	return doc, outDoc, nil
}

// fixedArgs are the rule's fixed arguments in canonical JSON, and the
// parameters the model does not see: the denied, then the fixed, sorted.
func fixedArgs(rule Rule) (fixed map[string]json.RawMessage, hidden []string, err error) {
	fixed = map[string]json.RawMessage{}
	for k, v := range rule.Fixed {
		cv, err := agentrt.CanonicalJSON(v)
		if err != nil {
			return nil, nil, fmt.Errorf("the fixed value of %q is not acceptable JSON: %v", k, err)
		}
		fixed[k] = cv
	}
	hidden = append([]string(nil), rule.Deny...)
	for _, k := range slices.Sorted(maps.Keys(rule.Fixed)) {
		if contains(rule.Deny, k) {
			return nil, nil, fmt.Errorf("parameter %q is both denied and fixed", k)
		}
		hidden = append(hidden, k)
	}
	return fixed, hidden, nil
}

// HintDispute says how a server's annotations dispute classifying a tool
// as class, or "" when they do not: the check Load applies to a rule
// without AllowHintMismatch. A tool that writes rules (`agentrt-proxy
// review`) asks it before the operator's choice is refused at load.
func HintDispute(class agentrt.SideEffect, a *Annotations) string { return hintMismatch(class, a) }

// hintMismatch says how the server's annotations dispute a class, or "".
// Absent annotations dispute nothing. A read_only class is disputed by a
// server that does not claim readOnlyHint; any other class short of
// destructive by one that claims destructiveHint (and not read-only).
func hintMismatch(class agentrt.SideEffect, a *Annotations) string {
	if a == nil {
		return ""
	}
	ro := a.ReadOnlyHint != nil && *a.ReadOnlyHint
	destructive := a.DestructiveHint != nil && *a.DestructiveHint
	switch {
	case class == agentrt.ReadOnly && !ro:
		return "classified read_only, but the server does not claim readOnlyHint"
	case class != agentrt.Destructive && class != agentrt.ReadOnly && destructive && !ro:
		return fmt.Sprintf("classified %s, but the server claims destructiveHint", class)
	}
	return ""
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Offline builds the tools m pins and rules classify, checked as Load
// checks them but against the pin instead of a listing, without
// connecting: for a server that cannot be reached now (its login lapsed),
// so its tools can still be offered. Each one's Call fails as CallNotSent
// (ErrClosed); a caller swaps in Load's tools once the server is
// reachable. The report's Connection is nil.
func Offline(srv Server, m *Manifest, rules Rules) ([]agentrt.Tool, *Report, error) {
	if err := srv.validate(); err != nil {
		return nil, nil, err
	}
	if m == nil || m.Server != srv.Name {
		return nil, nil, fmt.Errorf("mcp: server %q: no manifest pins it; run Pin first", srv.Name)
	}
	c := &Connection{srv: srv, closed: make(chan struct{})}
	c.closeOnce.Do(func() { close(c.closed) })
	l := &listing{byName: map[string]*liveTool{}}
	for _, name := range slices.Sorted(maps.Keys(m.Tools)) {
		p := m.Tools[name]
		// A listing's schemas are canonical; the manifest file's may be
		// indented.
		in, err := agentrt.CanonicalJSON(p.InputSchema)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp: server %q: the pinned input schema of %q cannot be read: %v", srv.Name, trace.Sanitize(name), err)
		}
		var out json.RawMessage
		if p.OutputSchema != nil {
			if out, err = agentrt.CanonicalJSON(p.OutputSchema); err != nil {
				return nil, nil, fmt.Errorf("mcp: server %q: the pinned output schema of %q cannot be read: %v", srv.Name, trace.Sanitize(name), err)
			}
		}
		lt := &liveTool{Name: name, Description: p.Description, InputSchema: in, OutputSchema: out,
			Annotations: p.Annotations, SchemaHash: p.SchemaHash, DescriptionHash: p.DescriptionHash, OutputSchemaHash: p.OutputSchemaHash}
		l.tools = append(l.tools, lt)
		l.byName[name] = lt
	}
	tools, rep := c.register(l, m, rules)
	return tools, rep, nil
}
