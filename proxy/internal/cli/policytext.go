package cli

import (
	"fmt"
	"io"
	"strings"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// classes are the side-effect classes, least to most dangerous: the
// order init writes them and review and check print them.
var classes = []agentrt.SideEffect{agentrt.ReadOnly, agentrt.LocalMutation, agentrt.RemoteMutation, agentrt.Destructive}

// initPolicy is the policy init writes: reads run, every change waits for
// an operator, destructive tools are denied. It is stricter than
// agentrt.DefaultPolicy, which lets local_mutation run unasked: a host's
// servers write files the operator has not seen yet.
func initPolicy() agentrt.SideEffectPolicy {
	return agentrt.SideEffectPolicy{
		agentrt.ReadOnly:       agentrt.Allow,
		agentrt.LocalMutation:  agentrt.RequireApproval,
		agentrt.RemoteMutation: agentrt.RequireApproval,
		agentrt.Destructive:    agentrt.Deny,
	}
}

// outcomeText says what an outcome does to a call, in the words init,
// review and check print; "" is a policy file's call-by-call verdict.
func outcomeText(o agentrt.PolicyOutcome) string {
	switch o {
	case agentrt.Allow:
		return "runs without approval"
	case agentrt.RequireApproval:
		return "waits for approval"
	case agentrt.Deny:
		return "denied"
	case "":
		return "decided call by call by the policy file"
	}
	return trace.Sanitize(string(o))
}

// printClasses prints what a tool of each class does under cfg's policy,
// one class a line, or that a policy file decides instead.
func printClasses(w io.Writer, cfg *proxy.Config) {
	if cfg.PolicyFile != "" {
		fmt.Fprintf(w, "policy: the policy file %s decides every call, whatever the tool's class\n", trace.Sanitize(cfg.PolicyFile))
		return
	}
	fmt.Fprintf(w, "policy: what a tool of each class does (\"policy\" in %s)\n", trace.Sanitize(cfg.Path))
	for _, c := range classes {
		fmt.Fprintf(w, "  %s: %s\n", c, outcomeText(cfg.ClassOutcome(c)))
	}
}

// policyFlag collects init's -policy CLASS=OUTCOME answers over
// initPolicy.
type policyFlag struct{ p agentrt.SideEffectPolicy }

func (f *policyFlag) String() string { return "" }

func (f *policyFlag) Set(v string) error {
	class, out, ok := strings.Cut(v, "=")
	se, po := agentrt.SideEffect(class), agentrt.PolicyOutcome(out)
	switch {
	case !ok:
		return fmt.Errorf("%q is not CLASS=OUTCOME (for example local_mutation=allow)", v)
	case !se.Valid():
		return fmt.Errorf("%q is not read_only, local_mutation, remote_mutation or destructive", class)
	case po != agentrt.Allow && po != agentrt.RequireApproval && po != agentrt.Deny:
		return fmt.Errorf("%q is not allow, require_approval or deny", out)
	}
	f.p[se] = po
	return nil
}
