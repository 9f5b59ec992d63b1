package cli

import (
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/view"
)

var runsCommand = fromKit(&kitCmd{
	Name:    "runs",
	Summary: "list runs, newest first",
	Usage:   "[-limit N] [-offset N]",
	Bind:    paged(defaultRuns, "how many runs to list", "how many of the newest runs to skip", runRuns),
})

func runRuns(x *inv, o *pageOptions, pos []string) int {
	if len(pos) > 0 {
		return x.usageError(x.c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if code := checkPage(x.c, x.env, o.limit, o.offset); code != ExitOK {
		return code
	}
	st, _, code := x.g.openDB(x.env, x.c, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()

	runs, total, err := view.RunsPage(background(), st, o.limit, o.offset)
	if err != nil {
		return x.fail("reading runs: %v", err)
	}
	p := &printer{w: x.stdout}
	more := total - o.offset - len(runs)
	if x.g.json {
		// JSON Lines, as events prints: one run a line, then the page's
		// counts on a {"meta":true,...} line.
		for _, r := range runs {
			writeJSON(p, r)
		}
		writePageMeta(p, total, len(runs), o.limit, o.offset)
		return x.done(p, ExitOK)
	}
	if len(runs) == 0 {
		if total > 0 {
			p.printf("no runs from offset %d; there are %d\n", o.offset, total)
		} else {
			p.printf("no runs\n")
		}
		return x.done(p, ExitOK)
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
		p.printf("... %d more run(s) of %d; rerun with -offset %s\n", more, total, strconv.Itoa(o.offset+len(runs)))
	}
	return x.done(p, ExitOK)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
