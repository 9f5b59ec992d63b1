package config

import (
	"maps"
	"slices"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// Surface is what the proxy forwards from upstream servers besides tools.
// Each is a read: it changes nothing upstream, so it is read_only unless
// the operator's configuration says allow or deny for the server.
type Surface string

const (
	// SurfaceResources is resources/list, resources/read and
	// resources/templates/list.
	SurfaceResources Surface = "resources"
	// SurfacePrompts is prompts/list and prompts/get.
	SurfacePrompts Surface = "prompts"
	// SurfaceCompletion is completion/complete for a prompt's or a
	// resource template's arguments.
	SurfaceCompletion Surface = "completion"
	// SurfaceLogging is the server's log messages, at the level the host
	// asked for with logging/setLevel.
	SurfaceLogging Surface = "logging"
)

// Surfaces are every Surface, in the order the proxy reads them.
var Surfaces = []Surface{SurfaceResources, SurfacePrompts, SurfaceCompletion, SurfaceLogging}

func resolveSurfaces(field string, in map[string]string) (map[Surface]agentrt.PolicyOutcome, error) {
	out := map[Surface]agentrt.PolicyOutcome{}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		s := Surface(k)
		known := false
		for _, v := range Surfaces {
			known = known || v == s
		}
		if !known {
			return nil, bad(field+".surfaces", "names %q; the surfaces are resources, prompts, completion and logging", trace.Sanitize(k))
		}
		o := agentrt.PolicyOutcome(in[k])
		if o != agentrt.Allow && o != agentrt.Deny {
			return nil, bad(field+".surfaces."+k, "must be allow or deny (a read surface cannot wait for an approval), got %q", trace.Sanitize(string(o)))
		}
		out[s] = o
	}
	return out, nil
}

// ServerRequest is a request an upstream server sends the host through
// the proxy: refused unless the server's entry forwards it.
type ServerRequest string

const (
	// RequestSampling is sampling/createMessage.
	RequestSampling ServerRequest = "sampling"
	// RequestElicitation is elicitation/create.
	RequestElicitation ServerRequest = "elicitation"
)

func resolveForward(field string, in []string) (map[ServerRequest]bool, error) {
	out := map[ServerRequest]bool{}
	for _, k := range in {
		r := ServerRequest(k)
		if r != RequestSampling && r != RequestElicitation {
			return nil, bad(field+".forward", "names %q; a server's requests the proxy can forward are sampling and elicitation", trace.Sanitize(k))
		}
		out[r] = true
	}
	return out, nil
}

// RuleOutcome is a rule's own outcome when it sets one, else its class's
// under classes; a class the policy does not name is denied.
func RuleOutcome(own agentrt.PolicyOutcome, se agentrt.SideEffect, classes agentrt.SideEffectPolicy) agentrt.PolicyOutcome {
	if own != "" {
		return own
	}
	if o, ok := classes[se]; ok {
		return o
	}
	return agentrt.Deny
}

// ClassOutcome is what the configuration's policy does with a call to a
// tool of class se whose rule sets no outcome of its own: allow,
// require_approval or deny. It is "" when a policy file decides every
// call, since the file's verdict depends on the call.
func (c *Config) ClassOutcome(se agentrt.SideEffect) agentrt.PolicyOutcome {
	if c.PolicyFile != "" {
		return ""
	}
	return RuleOutcome("", se, c.Policy)
}

// ToolOutcome is what the policy does with a call to the named server's
// tool (its name on that server), as the gate decides it: the rule's own
// outcome, else its class's. It is "" when a policy file decides every
// call or no rule names the tool.
func (c *Config) ToolOutcome(server, tool string) agentrt.PolicyOutcome {
	if c.PolicyFile != "" {
		return ""
	}
	for _, s := range c.Servers {
		if r, ok := s.Rules[tool]; ok && s.Name == server {
			return RuleOutcome(r.Outcome, r.SideEffect, c.Policy)
		}
	}
	return ""
}

// SuggestedTool is one tool whose rule is still a suggestion.
type SuggestedTool struct {
	Server, Tool string
	Class        agentrt.SideEffect
	Reason       string
}

func (s SuggestedTool) String() string {
	return s.Server + "." + trace.Sanitize(s.Tool)
}

// Suggested lists the tools whose rules are still suggestions, by server
// in the file's order and by tool name.
func (c *Config) Suggested() []SuggestedTool {
	var out []SuggestedTool
	for _, s := range c.Servers {
		for _, name := range slices.Sorted(maps.Keys(s.Rules)) {
			if r := s.Rules[name]; r.Suggestion != "" {
				out = append(out, SuggestedTool{Server: s.Name, Tool: name, Class: r.SideEffect, Reason: r.Suggestion})
			}
		}
	}
	return out
}
