package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// PolicyOutcome is what a policy decided about a request.
type PolicyOutcome string

const (
	// Allow runs the request.
	Allow PolicyOutcome = "allow"
	// Deny records a policy_denied observation; the loop goes on.
	Deny PolicyOutcome = "deny"
	// Abort ends the run FAILED with policy_abort.
	Abort PolicyOutcome = "abort"
	// RequireApproval pauses the run on an approval bound to the request.
	RequireApproval PolicyOutcome = "require_approval"
)

// Valid reports whether the runtime knows the outcome. Any other outcome fails
// the run as internal_error.
func (o PolicyOutcome) Valid() bool {
	switch o {
	case Allow, Deny, Abort, RequireApproval:
		return true
	}
	return false
}

// ToolRequest is a validated request as the policy judges it and an approval
// binds it. As handed to a policy, Args and Spec.InputSchema are in PolicyJSON
// form on every path.
type ToolRequest struct {
	RunID  string          `json:"run_id"`
	StepID string          `json:"step_id"`
	Spec   ToolSpec        `json:"spec"`
	Args   json.RawMessage `json:"args" audit:"content"`
	// Secrets says where the arguments carry a secret and of which kind,
	// as the engine's Disclosure found them (ArgumentScanner); never the
	// value. Nil when none was found or nothing scanned. The engine fills
	// it for the policy only: an approval's recorded request and hash
	// leave it out, and the arguments are never altered.
	Secrets []ArgumentSecret `json:"secrets,omitempty"`
}

// RunView is the run as recorded, handed to a policy or a reconciliation.
// Run is the consumer's own copy. Steps (the steps before the current one)
// and Approvals share the record read-only: a view costs nothing to hand
// over however long the run, and nothing a consumer writes to what it was
// handed reaches the record, another consumer, or any later view, its own
// included.
type RunView struct {
	Run       Run
	Steps     Steps
	Approvals Approvals
}

// PolicyDecision is a policy's judgement. Kind, Capability, Presentation and
// TTL matter for RequireApproval only.
type PolicyDecision struct {
	Outcome      PolicyOutcome   `json:"outcome"`
	Reason       string          `json:"reason,omitempty" audit:"content"`
	Kind         string          `json:"kind,omitempty"`
	Capability   json.RawMessage `json:"capability,omitempty" audit:"content"`
	Presentation json.RawMessage `json:"presentation,omitempty" audit:"content"`
	// TTL, when positive, bounds how long the approval may stay pending.
	// It can only shorten the run's Limits.ApprovalTTL, never lengthen it:
	// the shorter of the two applies. Zero or negative means the limit
	// alone. It is not part of the approval's hash.
	TTL time.Duration `json:"ttl,omitempty"`
	// RequireSignature, on a require_approval outcome, makes the grant
	// need a signature by an enrolled, unremoved approver, as
	// Limits.RequireSignedGrant does for a whole run. It is not part of
	// the approval's hash; Resume honours it from the decision that paused
	// the step and from the policy asked again.
	RequireSignature bool `json:"require_signature,omitempty"`
	// Requirement, on a require_approval outcome, asks for stages of votes
	// rather than one decision. It and the policy's id are part of the
	// approval's hash: a policy that asks for another requirement, or
	// another policy, is another approval, and votes do not carry over.
	Requirement *Requirement `json:"requirement,omitempty"`
}

// Policy judges requests. The agent has no handle to it.
type Policy interface {
	Evaluate(ctx context.Context, req ToolRequest, view RunView) (PolicyDecision, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(ctx context.Context, req ToolRequest, view RunView) (PolicyDecision, error)

// Evaluate calls f.
func (f PolicyFunc) Evaluate(ctx context.Context, req ToolRequest, view RunView) (PolicyDecision, error) {
	return f(ctx, req, view)
}

// IdentifiedPolicy is a policy that names itself; the name is recorded with
// every decision it makes, for Recheck.
type IdentifiedPolicy interface {
	Policy
	PolicyID() string
}

// SideEffectPolicy decides by the tool's side-effect class. A class it does not
// map is denied (fail closed). A remote_mutation or destructive call whose
// arguments carry a secret (ToolRequest.Secrets) that its class would
// allow waits for approval instead; a deny or abort stands.
type SideEffectPolicy map[SideEffect]PolicyOutcome

// Evaluate looks up the request's class.
func (p SideEffectPolicy) Evaluate(_ context.Context, req ToolRequest, _ RunView) (PolicyDecision, error) {
	out, ok := p[req.Spec.SideEffect]
	if !ok {
		return PolicyDecision{Outcome: Deny, Reason: fmt.Sprintf("no policy for side effect %q", req.Spec.SideEffect)}, nil
	}
	reason := fmt.Sprintf("%s needs approval", req.Spec.SideEffect)
	sends := len(req.Secrets) > 0 && (req.Spec.SideEffect == RemoteMutation || req.Spec.SideEffect == Destructive)
	if out == Allow && sends {
		out, reason = RequireApproval, fmt.Sprintf("%s call whose arguments carry a secret needs approval", req.Spec.SideEffect)
	}
	if out != RequireApproval {
		return PolicyDecision{Outcome: out, Reason: sideEffectReason(req.Spec.SideEffect, out)}, nil
	}
	raw, err := approvalBody(req)
	if err != nil {
		return PolicyDecision{}, err
	}
	return PolicyDecision{
		Outcome:      RequireApproval,
		Reason:       reason,
		Kind:         string(req.Spec.SideEffect),
		Capability:   raw,
		Presentation: raw,
	}, nil
}

// approvalBody is what SideEffectPolicy's approvals show and bind:
// {"tool", "args"}. When the arguments carry secrets, each is shown as
// [REDACTED:<kind>] and "secrets" lists which pointer carries which kind,
// so no value reaches the approval's presentation; the approval's hash
// still binds the arguments as they will execute.
func approvalBody(req ToolRequest) (json.RawMessage, error) {
	// The request is handed in policy form, so these bytes are the same on
	// every path.
	body := map[string]json.RawMessage{}
	name, err := json.Marshal(req.Spec.Name)
	if err != nil {
		return nil, err
	}
	body["tool"] = name
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if len(req.Secrets) > 0 {
		if args, err = RedactArguments(args, req.Secrets); err != nil {
			return nil, err
		}
		if body["secrets"], err = json.Marshal(req.Secrets); err != nil {
			return nil, err
		}
	}
	body["args"] = args
	return json.Marshal(body)
}

// sideEffectReason says why a class got its outcome; the common answers are
// constants.
func sideEffectReason(se SideEffect, out PolicyOutcome) string {
	switch {
	case se == ReadOnly && out == Allow:
		return "read_only is allow"
	case se == LocalMutation && out == Allow:
		return "local_mutation is allow"
	case se == Destructive && out == Deny:
		return "destructive is deny"
	}
	return fmt.Sprintf("%s is %s", se, out)
}

// DefaultPolicy decides by the tool's class:
//
//   - read_only: runs without approval.
//   - local_mutation: runs without approval. A tool that writes files in
//     a workspace acts unasked; set LocalMutation to RequireApproval to
//     have an operator see each write first.
//   - remote_mutation: waits for an operator's approval.
//   - destructive: denied; it never runs.
//
// A class it does not name (an empty or unknown one) is denied.
func DefaultPolicy() SideEffectPolicy {
	return SideEffectPolicy{
		ReadOnly:       Allow,
		LocalMutation:  Allow,
		RemoteMutation: RequireApproval,
		Destructive:    Deny,
	}
}

// ApprovalOption adjusts the decision NeedApproval builds.
type ApprovalOption func(*PolicyDecision)

// ExpiresAfter sets the decision's TTL: the approval expires ttl after it
// starts waiting unless the run's Limits.ApprovalTTL is shorter, so a
// policy can let a payment wait 15 minutes and a file write a day in one
// run. Zero or negative leaves the run's limit alone. The TTL is not part
// of the approval's hash.
func ExpiresAfter(ttl time.Duration) ApprovalOption {
	return func(pd *PolicyDecision) { pd.TTL = ttl }
}

// NeedApproval builds a require_approval decision. A nil capability or
// presentation is {}; a value that will not encode is an error. Options
// apply in order.
func NeedApproval(kind, reason string, capability, presentation any, opts ...ApprovalOption) (PolicyDecision, error) {
	enc := func(what string, v any) (json.RawMessage, error) {
		if v == nil {
			return json.RawMessage("{}"), nil
		}
		if raw, ok := v.(json.RawMessage); ok {
			if len(raw) == 0 {
				return json.RawMessage("{}"), nil
			}
			return append(json.RawMessage(nil), raw...), nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("agentrt: approval %s will not encode: %w", what, err)
		}
		return b, nil
	}
	c, err := enc("capability", capability)
	if err != nil {
		return PolicyDecision{}, err
	}
	p, err := enc("presentation", presentation)
	if err != nil {
		return PolicyDecision{}, err
	}
	pd := PolicyDecision{Outcome: RequireApproval, Reason: reason, Kind: kind, Capability: c, Presentation: p}
	for _, o := range opts {
		if o != nil {
			o(&pd)
		}
	}
	return pd, nil
}
