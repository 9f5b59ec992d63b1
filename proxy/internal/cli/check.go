package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentrt/agentrt/mcp"

	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// check prints each server's load report, the status tool, the session
// and the database; it fails when nothing registers.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	path, code, ok := flags("check", args, stderr, nil)
	if !ok {
		return code
	}
	cfg, code := loadConfig("check", path, stderr)
	if cfg == nil {
		return code
	}
	printClasses(stdout, cfg)
	reps, err := proxy.Check(ctx, cfg)
	for _, r := range reps {
		printReport(stdout, cfg, r)
	}
	for _, st := range cfg.Suggested() {
		fmt.Fprintf(stdout, "suggested %s: %s (%s); not offered until `agentrt-proxy review`\n", st, st.Class, trace.Sanitize(st.Reason))
	}
	if err != nil {
		return fail(stderr, "check", err)
	}
	fmt.Fprintf(stdout, "status tool %s\nsession %s\ndatabase %s\nindex %s\n", cfg.StatusTool, cfg.Session,
		trace.Sanitize(cfg.Database), trace.Sanitize(cfg.Index))
	return ExitOK
}

// printReport prints a server's load report with, for each registered
// tool, what the policy does with a call to it.
func printReport(w io.Writer, cfg *proxy.Config, r *mcp.Report) {
	rest := *r
	rest.Registered = nil
	head, tail, _ := strings.Cut(rest.String(), "\n")
	fmt.Fprintln(w, head)
	for _, g := range r.Registered {
		fmt.Fprintf(w, "registered %s as %s (%s): %s", trace.Sanitize(g.Tool), trace.Sanitize(g.Name), g.SideEffect, outcomeText(cfg.ToolOutcome(r.Server, g.Tool)))
		if g.HintMismatch != "" {
			fmt.Fprintf(w, " [hint mismatch allowed: %s]", trace.Sanitize(g.HintMismatch))
		}
		fmt.Fprintln(w)
	}
	io.WriteString(w, tail)
}
