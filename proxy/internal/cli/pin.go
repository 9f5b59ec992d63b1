package cli

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/trace"
)

// pin connects to each server, records what it presents in its manifest
// (0600), and prints each tool's hints for the operator's review.
func pin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	path, code, ok := flags("pin", args, stderr, nil)
	if !ok {
		return code
	}
	cfg, code := loadConfig("pin", path, stderr)
	if cfg == nil {
		return code
	}
	for _, s := range cfg.Servers {
		m, err := mcp.Pin(ctx, s.Server())
		if err != nil {
			return fail(stderr, "pin", err)
		}
		if err := mcp.WriteManifest(s.Manifest, m); err != nil {
			return fail(stderr, "pin", err)
		}
		fmt.Fprintf(stdout, "server %s: pinned %d tool(s) to %s\n", s.Name, len(m.Tools), trace.Sanitize(s.Manifest))
		names := make([]string, 0, len(m.Tools))
		for n := range m.Tools {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			rule := "no rule: not offered"
			if r, ok := s.Rules[n]; ok {
				rule = "rule: " + string(r.SideEffect)
				if r.Outcome != "" {
					rule += ", " + string(r.Outcome)
				}
			}
			fmt.Fprintf(stdout, "  %s: %s; %s\n", trace.Sanitize(n), hints(m.Tools[n].Annotations), rule)
		}
	}
	return ExitOK
}

// hints says what a server claims about a tool. Claims are hints for the
// operator's review; they classify nothing.
func hints(a *mcp.Annotations) string {
	if a == nil {
		return "no annotations"
	}
	var out []string
	claim := func(name string, v *bool) {
		if v != nil {
			out = append(out, fmt.Sprintf("%s=%v", name, *v))
		}
	}
	claim("readOnly", a.ReadOnlyHint)
	claim("destructive", a.DestructiveHint)
	claim("idempotent", a.IdempotentHint)
	claim("openWorld", a.OpenWorldHint)
	if len(out) == 0 {
		return "claims nothing"
	}
	s := "claims"
	for _, o := range out {
		s += " " + o
	}
	return s
}
