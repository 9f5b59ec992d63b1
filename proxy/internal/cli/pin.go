package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// pin connects to each server, records what it presents in its manifest
// (0600), and prints each tool's hints for the operator's review. With
// -diff it first shows what changed since the last pin, tool by tool, and
// writes a changed manifest only when the operator answers yes (or gave
// -yes): an upgrade that rewrote a description is read, not stamped.
func pin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var diff, yes bool
	path, code, ok := flags("pin", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&diff, "diff", false, "show what changed since the last pin before writing")
		fs.BoolVar(&yes, "yes", false, "with -diff, write without asking")
	})
	if !ok {
		return code
	}
	if yes && !diff {
		fmt.Fprintln(stderr, "agentrt-proxy pin: -yes goes with -diff")
		return ExitUsage
	}
	cfg, code := loadConfig("pin", path, stderr)
	if cfg == nil {
		return code
	}
	in := bufio.NewScanner(stdin)
	declined := 0
	for _, s := range cfg.Servers {
		srv, err := s.Dial(proxy.DialOptions{})
		if err != nil {
			return fail(stderr, "pin", err)
		}
		m, err := mcp.Pin(ctx, srv)
		if err != nil {
			return fail(stderr, "pin", err)
		}
		if diff {
			old, err := mcp.ReadManifest(s.Manifest)
			if errors.Is(err, fs.ErrNotExist) {
				old = &mcp.Manifest{}
				fmt.Fprintf(stdout, "server %s: no earlier pin; every tool is new\n", s.Name)
			} else if err != nil {
				return fail(stderr, "pin", err)
			}
			if changes := manifestDiff(old, m); changes == "" {
				fmt.Fprintf(stdout, "server %s: nothing changed since the last pin\n", s.Name)
			} else {
				fmt.Fprintf(stdout, "server %s: changed since the last pin:\n%s", s.Name, changes)
				if !yes {
					fmt.Fprintf(stdout, "write the new manifest for server %s? [y/N] ", s.Name)
					answer := ""
					if in.Scan() {
						answer = strings.ToLower(strings.TrimSpace(in.Text()))
					}
					fmt.Fprintln(stdout)
					if answer != "y" && answer != "yes" {
						fmt.Fprintf(stdout, "server %s: not written; the last pin stands, and a changed tool stays refused\n", s.Name)
						declined++
						continue
					}
				}
			}
		}
		if err := mcp.WriteManifest(s.Manifest, m); err != nil {
			return fail(stderr, "pin", err)
		}
		fmt.Fprintf(stdout, "server %s: pinned %d tool(s) to %s\n", s.Name, len(m.Tools), trace.Sanitize(s.Manifest))
		for _, n := range slices.Sorted(maps.Keys(m.Tools)) {
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
	if declined > 0 {
		fmt.Fprintf(stderr, "agentrt-proxy pin: %d manifest(s) not written\n", declined)
		return ExitFailure
	}
	return ExitOK
}

// manifestDiff says, per tool, what differs between two pins: tools
// added and removed, and a unified diff of the description, the input
// schema and the output schema in their canonical forms, indented. Hints
// are shown when they changed. It is "" when nothing did.
func manifestDiff(old, cur *mcp.Manifest) string {
	var b strings.Builder
	names := map[string]bool{}
	for n := range old.Tools {
		names[n] = true
	}
	for n := range cur.Tools {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		o, wasPinned := old.Tools[n]
		c, offered := cur.Tools[n]
		name := trace.Sanitize(n)
		switch {
		case !wasPinned:
			fmt.Fprintf(&b, "tool %s: new since the last pin\n", name)
			b.WriteString(unifiedDiff("/dev/null", name+" description", nil, textLines(c.Description)))
			continue
		case !offered:
			fmt.Fprintf(&b, "tool %s: no longer offered\n", name)
			continue
		}
		var parts strings.Builder
		if o.DescriptionHash != c.DescriptionHash || o.Description != c.Description {
			parts.WriteString(unifiedDiff("pinned description", "presented description", textLines(o.Description), textLines(c.Description)))
		}
		if o.SchemaHash != c.SchemaHash {
			parts.WriteString(unifiedDiff("pinned input schema", "presented input schema", prettyLines(o.InputSchema), prettyLines(c.InputSchema)))
		}
		if o.OutputSchemaHash != c.OutputSchemaHash {
			parts.WriteString(unifiedDiff("pinned output schema", "presented output schema", prettyLines(o.OutputSchema), prettyLines(c.OutputSchema)))
		}
		if oh, ch := hints(o.Annotations), hints(c.Annotations); oh != ch {
			fmt.Fprintf(&parts, "hints: were %s; now %s\n", oh, ch)
		}
		if parts.Len() > 0 {
			fmt.Fprintf(&b, "tool %s changed:\n%s", name, parts.String())
		}
	}
	return b.String()
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
