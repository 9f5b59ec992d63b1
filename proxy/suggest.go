package proxy

import (
	"fmt"
	"sort"
	"strings"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/trace"
)

// Suggest is the class a pinned tool's annotations hint at, and the
// reason, for `agentrt-proxy init` to write as a suggestion. Annotations
// are the server's claims, so a suggestion classifies nothing: the tool
// is not offered until an operator accepts or changes it. readOnlyHint
// suggests read_only, destructiveHint destructive, and anything else
// remote_mutation, which waits for approval under agentrt.DefaultPolicy.
func Suggest(t mcp.PinnedTool) (agentrt.SideEffect, string) {
	a := t.Annotations
	switch {
	case a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return agentrt.ReadOnly, "the server claims readOnlyHint"
	case a != nil && a.DestructiveHint != nil && *a.DestructiveHint:
		return agentrt.Destructive, "the server claims destructiveHint"
	case a == nil:
		return agentrt.RemoteMutation, "the server gives no annotations; remote_mutation waits for approval"
	}
	return agentrt.RemoteMutation, "the server claims neither readOnlyHint nor destructiveHint; remote_mutation waits for approval"
}

// SuggestionsError is ErrNoTools when the only rules are suggestions: it
// names the tools and the command that turns them into rules.
type SuggestionsError struct {
	Config string
	Tools  []SuggestedTool
}

func (e *SuggestionsError) Error() string {
	names := make([]string, len(e.Tools))
	for i, t := range e.Tools {
		names[i] = t.String()
	}
	sort.Strings(names)
	return fmt.Sprintf("%v: every rule is still a suggestion (%s); an operator classifies a tool with `agentrt-proxy review -config %s`",
		ErrNoTools, strings.Join(names, ", "), trace.Sanitize(e.Config))
}

// Is matches ErrNoTools.
func (e *SuggestionsError) Is(target error) bool { return target == ErrNoTools }

// noTools is the error for a configuration under which nothing
// registered.
func noTools(cfg *Config) error {
	if s := cfg.Suggested(); len(s) > 0 {
		return &SuggestionsError{Config: cfg.Path, Tools: s}
	}
	return ErrNoTools
}

// suggestionLine is what the proxy says about a tool it will not offer.
func suggestionLine(cfg *Config, s SuggestedTool) string {
	return fmt.Sprintf("agentrt-proxy: server %s: tool %s is not offered: its rule is a suggestion (%s: %s), not a classification; review it with `agentrt-proxy review -config %s`",
		s.Server, trace.Sanitize(s.Tool), s.Class, trace.Sanitize(s.Reason), trace.Sanitize(cfg.Path))
}
