package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/trace"
)

// ptool is one proxied tool: what the model sees and what the operator
// said about it.
type ptool struct {
	name     string // the name the model sees
	server   string
	up       *upstream // the server
	upstream string    // the server's own name for the tool
	spec     agentrt.ToolSpec
	rule     ToolRule
	fixed    map[string]json.RawMessage // canonical
	window   time.Duration
}

func (t *ptool) mutating() bool { return t.spec.SideEffect != agentrt.ReadOnly }

// interruption is what an approval about an unknown outcome asks about:
// the call whose effect is unknown and how it ended.
type interruption struct {
	RunID     string `json:"run_id"`
	StepID    string `json:"step_id"`
	StartedAt string `json:"started_at"`
	// Ended is cut_off (the proxy stopped while the tool ran), timed_out,
	// no_answer (the connection ended) or unclassified (the proxy stopped
	// before it recorded what the failure was).
	Ended string `json:"ended"`
}

// capability is what an approval binds beyond the request: the server and
// tool it reaches, the class, the arguments, the operator's fixed values
// (which the request does not carry, so a changed value asks again) and,
// for a re-run of an unknown outcome, the interruption.
type capability struct {
	Server      string                     `json:"server"`
	Tool        string                     `json:"tool"`
	Name        string                     `json:"name"`
	SideEffect  agentrt.SideEffect         `json:"side_effect"`
	Args        json.RawMessage            `json:"args"`
	Fixed       map[string]json.RawMessage `json:"fixed"`
	Interrupted *interruption              `json:"interrupted,omitempty"`
	// Secrets lists where the arguments carry a secret and of which kind
	// (ToolRequest.Secrets); each such value in Args is shown as
	// [REDACTED:<kind>]. The approval's hash binds the request itself, so
	// the arguments as they will execute are still what is approved.
	Secrets []agentrt.ArgumentSecret `json:"secrets,omitempty"`
	// Policy is the capability a policy file's rule asked for, bound with
	// the rest.
	Policy json.RawMessage `json:"policy,omitempty"`
}

type presentation struct {
	capability
	Question string `json:"question"`
	Reason   string `json:"reason"`
	Notice   string `json:"notice,omitempty"`
	// PolicyShows is the presentation a policy file's rule built.
	PolicyShows json.RawMessage `json:"policy_shows,omitempty"`
}

const unknownNotice = "This exact call was started before and its outcome is unknown: it may already have taken effect. Approving runs it again with these arguments; rejecting leaves it unrun, and unblocks the tool."

// decision builds the require_approval decision for a request; args are in
// policy form, and secrets are the findings in them.
func (t *ptool) decision(args json.RawMessage, secrets []agentrt.ArgumentSecret, in *interruption) (agentrt.PolicyDecision, error) {
	return t.decisionFor(args, secrets, in, nil)
}

// decisionFor is decision with what a policy file's require_approval added:
// its kind, reason, TTL, capability and presentation. The proxy's own
// capability (server, tool, arguments, fixed values) is always bound.
func (t *ptool) decisionFor(args json.RawMessage, secrets []agentrt.ArgumentSecret, in *interruption, file *agentrt.PolicyDecision) (agentrt.PolicyDecision, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if len(secrets) > 0 {
		// The operator is shown, and the record keeps, where a secret is
		// and of which kind, never its value.
		var err error
		if args, err = agentrt.RedactArguments(args, secrets); err != nil {
			return agentrt.PolicyDecision{}, err
		}
	}
	fixed := t.fixed
	if fixed == nil {
		fixed = map[string]json.RawMessage{}
	}
	c := capability{Server: t.server, Tool: t.upstream, Name: t.name, SideEffect: t.spec.SideEffect, Args: args, Fixed: fixed, Interrupted: in,
		Secrets: secrets}
	p := presentation{capability: c,
		Question: fmt.Sprintf("Run %s on server %s with these arguments?", t.upstream, t.server),
		Reason:   fmt.Sprintf("%s needs approval", t.spec.SideEffect)}
	kind := string(t.spec.SideEffect)
	if in != nil {
		kind = agentrt.InterruptedSideEffect
		p.Question = fmt.Sprintf("Run %s on server %s again with these arguments?", t.upstream, t.server)
		p.Reason = "interrupted while executing; outcome unknown (" + in.Ended + ")"
		p.Notice = unknownNotice
	}
	var ttl time.Duration
	if file != nil && in == nil {
		if file.Kind != "" {
			kind = file.Kind
		}
		if file.Reason != "" {
			p.Reason = file.Reason
		}
		c.Policy, p.PolicyShows, ttl = file.Capability, file.Presentation, file.TTL
		p.capability = c
	}
	d, err := agentrt.NeedApproval(kind, p.Reason, c, p)
	d.TTL = ttl
	return d, err
}

// outcome decides by the tool's own outcome, else its class.
func (t *ptool) outcome(classes agentrt.SideEffectPolicy) agentrt.PolicyOutcome {
	return config.RuleOutcome(t.rule.Outcome, t.spec.SideEffect, classes)
}

// sendsOut says whether an allowed call of the tool that carries a secret
// in its arguments waits for an operator instead: it sends them to a
// remote party or destroys something, as agentrt.SideEffectPolicy judges.
func (t *ptool) sendsOut() bool {
	return t.spec.SideEffect == agentrt.RemoteMutation || t.spec.SideEffect == agentrt.Destructive
}

// secretDecision is the approval an allowed call waits for because its
// arguments carry a secret: the tool's own, whose capability and
// presentation list each finding's pointer and kind, with a reason that
// says so.
func (t *ptool) secretDecision(args json.RawMessage, secrets []agentrt.ArgumentSecret) (agentrt.PolicyDecision, error) {
	why := &agentrt.PolicyDecision{Reason: fmt.Sprintf("%s call whose arguments carry a secret (%s) needs approval",
		t.spec.SideEffect, secretKinds(secrets))}
	return t.decisionFor(args, secrets, nil, why)
}

// secretKinds names the kinds of the findings, each once, in order.
func secretKinds(secrets []agentrt.ArgumentSecret) string {
	var kinds []string
	seen := map[string]bool{}
	for _, s := range secrets {
		if !seen[s.Kind] {
			seen[s.Kind] = true
			kinds = append(kinds, s.Kind)
		}
	}
	return strings.Join(kinds, ", ")
}

// gatePolicy is the policy every proxied call is judged by. Its id covers
// everything it decides from, so a re-check names which policy decided.
type gatePolicy struct {
	classes agentrt.SideEffectPolicy
	// file, when set, decides instead of classes and the rules' outcomes.
	file  agentrt.IdentifiedPolicy
	tools map[string]*ptool
	// asks are the askTool names the configuration forwards.
	asks map[string]bool
	id   string
	// scan finds secrets in a call's arguments with the configuration's
	// disclosure rules, for preview; the gate's engine scans with the
	// same rules before Evaluate.
	scan agentrt.ArgumentScanner
}

type reaskKey struct{}

// withReask marks a proposal as the re-run of a call whose outcome is
// unknown: the policy asks about the interruption rather than the class.
func withReask(ctx context.Context, in *interruption) context.Context {
	return context.WithValue(ctx, reaskKey{}, in)
}

func newGatePolicy(cfg *Config, tools map[string]*ptool) (*gatePolicy, error) {
	type ruleID struct {
		SideEffect agentrt.SideEffect         `json:"side_effect"`
		Outcome    agentrt.PolicyOutcome      `json:"outcome,omitempty"`
		Fixed      map[string]json.RawMessage `json:"fixed,omitempty"`
		Rename     string                     `json:"rename,omitempty"`
	}
	type serverID struct {
		Name    string            `json:"name"`
		Rules   map[string]ruleID `json:"rules"`
		Forward []ServerRequest   `json:"forward,omitempty"`
	}
	var servers []serverID
	asks := map[string]bool{}
	for _, s := range cfg.Servers {
		sid := serverID{Name: s.Name, Rules: map[string]ruleID{}}
		for _, kind := range []ServerRequest{RequestSampling, RequestElicitation} {
			if s.Forward[kind] {
				sid.Forward = append(sid.Forward, kind)
				asks[askToolName(s.Name, kind)] = true
			}
		}
		for name, r := range s.Rules {
			if r.Suggestion != "" {
				continue // not offered, so nothing is decided from it
			}
			sid.Rules[name] = ruleID{SideEffect: r.SideEffect, Outcome: r.Outcome, Fixed: r.Fixed, Rename: r.Rename}
		}
		servers = append(servers, sid)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	var file agentrt.IdentifiedPolicy
	var fileID string
	if cfg.PolicyFile != "" {
		fp := config.FilePolicy(cfg)
		if fp == nil {
			var err error
			if fp, err = cel.Load(cfg.PolicyFile); err != nil {
				return nil, fmt.Errorf("proxy: policy_file: %w", err)
			}
		}
		file, fileID = fp, fp.PolicyID()
	}
	b, err := json.Marshal(struct {
		Policy  agentrt.SideEffectPolicy `json:"policy"`
		File    string                   `json:"policy_file,omitempty"`
		Servers []serverID               `json:"servers"`
	}{cfg.Policy, fileID, servers})
	if err != nil {
		return nil, err
	}
	c, err := agentrt.CanonicalJSON(b)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(c)
	rules, err := config.DisclosureRules(cfg)
	if err != nil {
		return nil, err
	}
	return &gatePolicy{classes: cfg.Policy, file: file, tools: tools, asks: asks, id: "agentrt-proxy/sha256:" + hex.EncodeToString(sum[:]),
		scan: rules}, nil
}

// preview is what the policy decides of a new call before its run
// exists: the file's verdict when a file decides (on the run as it will
// start), else the rule's or the class's outcome. The fast path for an
// allowed read and the max_pending cap go by it, so they follow what the
// gate will decide. An evaluation error previews as "" (the gate decides,
// and records the error).
func (g *gatePolicy) preview(ctx context.Context, t *ptool, args json.RawMessage, limits agentrt.Limits) agentrt.PolicyOutcome {
	if g.file == nil {
		out := t.outcome(g.classes)
		if out == agentrt.Allow && t.sendsOut() {
			secrets, err := g.scan.ScanArguments(ctx, t.spec, args)
			switch {
			case err != nil:
				return ""
			case len(secrets) > 0:
				return agentrt.RequireApproval
			}
		}
		return out
	}
	pa, err := agentrt.PolicyJSON(args)
	if err != nil {
		return ""
	}
	view := agentrt.RunView{Run: agentrt.Run{Status: agentrt.RunRunning, StepCount: 1, Limits: limits}}
	pd, err := g.file.Evaluate(ctx, agentrt.ToolRequest{Spec: t.spec, Args: pa}, view)
	if err != nil {
		return ""
	}
	return pd.Outcome
}

// PolicyID names the policy by a hash of what it decides from.
func (g *gatePolicy) PolicyID() string { return g.id }

// Evaluate denies what the tool's outcome denies; asks about the
// interruption for a re-run of an unknown outcome (marked on the proposal,
// or recorded as the step's approval); allows what the outcome allows,
// except a remote_mutation or destructive call whose arguments carry a
// secret (req.Secrets), which waits for an approval naming each finding's
// pointer and kind (the operator lets such a call run by turning the
// secret's rule off for the tool in the disclosure configuration); and
// otherwise asks for an approval bound to the capability.
func (g *gatePolicy) Evaluate(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
	t := g.tools[req.Spec.Name]
	if t == nil {
		if g.asks[req.Spec.Name] {
			return agentrt.PolicyDecision{Outcome: agentrt.Allow, Reason: "the operator forwards this server's requests to the host"}, nil
		}
		return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "not a proxied tool"}, nil
	}
	if g.file != nil {
		return g.evaluateFile(ctx, t, req, view)
	}
	out := t.outcome(g.classes)
	if out == agentrt.Deny {
		return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: fmt.Sprintf("%s is deny", t.spec.SideEffect)}, nil
	}
	if in := interruptionOf(ctx, req, view); in != nil {
		return t.decision(req.Args, req.Secrets, in)
	}
	if out == agentrt.Allow && len(req.Secrets) > 0 && t.sendsOut() {
		return t.secretDecision(req.Args, req.Secrets)
	}
	if out == agentrt.Allow {
		return agentrt.PolicyDecision{Outcome: agentrt.Allow, Reason: fmt.Sprintf("%s is allow", t.spec.SideEffect)}, nil
	}
	return t.decision(req.Args, req.Secrets, nil)
}

// evaluateFile lets the policy file decide. A deny or abort stands, and so
// does an evaluation error (the run fails; nothing runs). A re-run of an
// unknown outcome still waits for an operator, whatever the file allows. A
// require_approval is bound to the proxy's capability as well as the
// file's, so a changed fixed value still asks again.
func (g *gatePolicy) evaluateFile(ctx context.Context, t *ptool, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
	pd, err := g.file.Evaluate(ctx, req, view)
	if err != nil {
		return agentrt.PolicyDecision{}, err
	}
	switch pd.Outcome {
	case agentrt.Deny, agentrt.Abort:
		return pd, nil
	}
	if in := interruptionOf(ctx, req, view); in != nil {
		return t.decision(req.Args, req.Secrets, in)
	}
	switch pd.Outcome {
	case agentrt.Allow:
		return pd, nil
	case agentrt.RequireApproval:
		return t.decisionFor(req.Args, req.Secrets, nil, &pd)
	}
	return agentrt.PolicyDecision{}, fmt.Errorf("proxy: the policy file answered %q, not an outcome", trace.Sanitize(string(pd.Outcome)))
}

// interruptionOf finds the interruption a request re-runs: on a proposal,
// from its context; on a resume, from the step's latest approval when that
// asked about one.
func interruptionOf(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) *interruption {
	if in, ok := ctx.Value(reaskKey{}).(*interruption); ok && in != nil {
		return in
	}
	var latest *agentrt.Approval
	for _, a := range view.Approvals.All() {
		if a.StepID == req.StepID {
			a := a
			latest = &a
		}
	}
	if latest == nil || latest.Kind != agentrt.InterruptedSideEffect {
		return nil
	}
	var c capability
	if err := json.Unmarshal(latest.Capability, &c); err != nil || c.Interrupted == nil {
		return nil
	}
	return c.Interrupted
}

// reconcile is asked about a run whose lease lapsed: a call that was
// executing a tool that is not read-only waits for an operator, asked
// about the interruption; anything else continues, and the proxy runs a
// call that never reached its tool afresh.
func (p *Proxy) reconcile(ctx context.Context, view agentrt.RunView) (agentrt.Reconciliation, error) {
	n := view.Steps.Len()
	if n == 0 {
		return agentrt.Reconciliation{Outcome: agentrt.ReconcileContinue}, nil
	}
	st := view.Steps.At(n - 1)
	if st.Status != agentrt.StepInterrupted || st.Decision == nil || st.Decision.Kind != agentrt.KindToolCall || interruptedWhile(st.Observation) != agentrt.StepExecuting {
		return agentrt.Reconciliation{Outcome: agentrt.ReconcileContinue}, nil
	}
	t := p.tools[st.Decision.Tool]
	if t == nil || !t.mutating() {
		return agentrt.Reconciliation{Outcome: agentrt.ReconcileContinue}, nil
	}
	args, err := agentrt.PolicyJSON([]byte(st.Decision.Args))
	if err != nil {
		return agentrt.Reconciliation{Outcome: agentrt.ReconcileConflict, Detail: "the interrupted call's arguments will not encode: " + err.Error()}, nil
	}
	in := &interruption{RunID: view.Run.ID, StepID: st.ID, StartedAt: st.StartedAt.UTC().Format(time.RFC3339Nano), Ended: "cut_off"}
	secrets, err := p.argumentSecrets(ctx, t, args)
	if err != nil {
		return agentrt.Reconciliation{}, err
	}
	pd, err := t.decision(args, secrets, in)
	if err != nil {
		return agentrt.Reconciliation{}, err
	}
	return agentrt.Reconciliation{Outcome: agentrt.ReconcileWaiting, Pause: &pd, Detail: "interrupted while executing; outcome unknown"}, nil
}

// interruptedWhile is the status a step was in when a takeover marked it
// interrupted, from the observation the runtime recorded.
func interruptedWhile(o *agentrt.ObservationView) agentrt.StepStatus {
	if o == nil || o.Kind != agentrt.ObsInterrupted {
		return ""
	}
	var c struct {
		Previous agentrt.StepStatus `json:"previous_status"`
	}
	_ = json.Unmarshal([]byte(o.Content), &c)
	return c.Previous
}

// argumentSecrets are the findings of the proxy's disclosure rules in a
// call's arguments (policy form), for an approval the engine did not scan
// for: a reconciliation's.
func (p *Proxy) argumentSecrets(ctx context.Context, t *ptool, args json.RawMessage) ([]agentrt.ArgumentSecret, error) {
	rules, err := config.DisclosureRules(p.cfg)
	if err != nil {
		return nil, err
	}
	return rules.ScanArguments(ctx, t.spec, args)
}
