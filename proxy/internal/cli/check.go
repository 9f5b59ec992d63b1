package cli

import (
	"context"
	"fmt"
	"io"

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
	reps, err := proxy.Check(ctx, cfg)
	for _, r := range reps {
		io.WriteString(stdout, r.String())
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
