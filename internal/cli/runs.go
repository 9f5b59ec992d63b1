package cli

import (
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/view"
)

var runsCommand = &command{
	name:    "runs",
	summary: "list runs, newest first",
	usage:   "[-limit N] [-offset N]",
	run:     runRuns,
}

func runRuns(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	limit := fs.Int("limit", defaultRuns, fmt.Sprintf("how many runs to list, 1 to %d", maxLimit))
	offset := fs.Int("offset", 0, "how many of the newest runs to skip")
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if code := checkPage(c, e, *limit, *offset); code != ExitOK {
		return code
	}
	st, _, code := g.openDB(e, c, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()

	runs, total, err := view.RunsPage(background(), st, *limit, *offset)
	if err != nil {
		return e.fail("reading runs: %v", err)
	}
	p := &printer{w: e.stdout}
	more := total - *offset - len(runs)
	if g.json {
		// JSON Lines, as events prints: one run a line, then the page's
		// counts on a {"meta":true,...} line.
		for _, r := range runs {
			writeJSON(p, r)
		}
		writeJSON(p, struct {
			Meta      bool `json:"meta"`
			Truncated bool `json:"truncated"`
			Total     int  `json:"total"`
			Returned  int  `json:"returned"`
			Limit     int  `json:"limit"`
			Offset    int  `json:"offset"`
		}{true, more > 0, total, len(runs), *limit, *offset})
		return e.done(p, ExitOK)
	}
	if len(runs) == 0 {
		if total > 0 {
			p.printf("no runs from offset %d; there are %d\n", *offset, total)
		} else {
			p.printf("no runs\n")
		}
		return e.done(p, ExitOK)
	}
	tp := p.table()
	tp.printf("RUN\tSTATUS\tREASON\tSTEPS\tCREATED\tAPPROVAL\tGOAL\n")
	for _, r := range runs {
		tp.printf("%s\t%s\t%s\t%d\t%s\t%s\t%s\n", clip(r.ID, cellClipBytes), clip(string(r.Status), 40),
			dash(clip(string(r.Reason), 40)), r.Steps, when(r.CreatedAt), dash(clip(r.PendingApprovalID, cellClipBytes)),
			clip(r.Goal, goalClipBytes))
	}
	tp.end()
	if more > 0 {
		p.printf("... %d more run(s) of %d; rerun with -offset %s\n", more, total, strconv.Itoa(*offset+len(runs)))
	}
	return e.done(p, ExitOK)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
