package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// recheck asks today's policy about recorded calls. It exits 0 only when
// every decision re-checked is decided alike and at least one was.
func recheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var opts proxy.RecheckOptions
	var asJSON bool
	path, code, ok := flags("recheck", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&opts.RunID, "run", "", "re-check this run only")
		fs.StringVar(&opts.Session, "session", "", "re-check this session's calls (default: the configuration's)")
		fs.IntVar(&opts.Limit, "limit", proxy.DefaultRecheckLimit, "the most calls to re-check, newest first")
		fs.BoolVar(&opts.CurrentTools, "current-tools", false, "connect to the servers for specs the record lacks")
		fs.BoolVar(&asJSON, "json", false, "write JSON Lines")
	})
	if !ok {
		return code
	}
	if opts.RunID != "" && opts.Session != "" {
		fmt.Fprintln(stderr, "agentrt-proxy recheck: -run and -session are exclusive")
		return ExitUsage
	}
	if opts.Limit < 1 {
		fmt.Fprintln(stderr, "agentrt-proxy recheck: -limit must be positive")
		return ExitUsage
	}
	cfg, code := loadConfig("recheck", path, stderr)
	if cfg == nil {
		return code
	}
	sum, err := proxy.Recheck(ctx, cfg, opts)
	if err != nil {
		return fail(stderr, "recheck", err)
	}
	enc := json.NewEncoder(stdout)
	for _, rep := range sum.Reports {
		for _, ev := range rep.Evaluations {
			if asJSON {
				_ = enc.Encode(struct {
					Run string `json:"run"`
					agentrt.RecheckedEvaluation
				}{rep.RunID, ev})
				continue
			}
			if ev.Result == agentrt.RecheckSame {
				continue
			}
			fmt.Fprintf(stdout, "run %s step %d (%s): %s: %s\n", trace.Sanitize(rep.RunID), ev.StepIndex, trace.Sanitize(ev.Tool), ev.Result, trace.Sanitize(ev.Detail))
		}
	}
	line := fmt.Sprintf("%d run(s) re-checked under %s: %d decision(s) re-checked, %d not re-checkable and skipped; %d run(s) differ",
		len(sum.Reports), sum.PolicyID, sum.Checked, sum.Skipped, sum.Differ)
	if asJSON {
		_ = enc.Encode(map[string]any{"meta": true, "runs": len(sum.Reports), "policy_id": sum.PolicyID, "checked": sum.Checked, "skipped": sum.Skipped, "differ": sum.Differ})
	} else {
		fmt.Fprintln(stdout, line)
		fmt.Fprintln(stdout, "a re-check proves what today's policy decides about the record, not that the record is the one the proxy wrote")
	}
	if len(sum.Reports) == 0 || sum.Checked == 0 || sum.Differ > 0 {
		return ExitFailure
	}
	return ExitOK
}
