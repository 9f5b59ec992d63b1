package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/trace"
)

var retainCommand = &command{
	name:    "retain",
	summary: "erase the content of every run that ended before a cut, oldest first, in bounded batches",
	usage:   "-finished-before DURATION|TIME [-status S,...] [-dry-run] [-by WHO] [-reason TEXT] [-batch N]",
	run:     runRetain,
}

type retainReport struct {
	Cut    time.Time `json:"cut"`
	DryRun bool      `json:"dry_run"`
	agentrt.RetainReport
}

func runRetain(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	before := fs.String("finished-before", "", "erase runs that ended before this: a duration ago (720h) or an RFC 3339 time")
	statusArg := fs.String("status", "", "only runs ending in these statuses, comma-separated (COMPLETED,FAILED,CANCELLED)")
	dry := fs.Bool("dry-run", false, "list the runs that would be erased and change nothing")
	by := fs.String("by", "", "who erases, recorded in each run.erased event (default $USER, else your account's name)")
	reason := fs.String("reason", "retention", "why, recorded in each run.erased event")
	batch := fs.Int("batch", agentrt.DefaultRetainBatch, fmt.Sprintf("runs erased per transaction, 1 to %d", agentrt.MaxEraseBatch))
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	now := time.Now()
	if e.now != nil {
		now = e.now()
	}
	if *before == "" {
		return e.usageError(c, "-finished-before is required: a duration ago (720h) or an RFC 3339 time")
	}
	var cut time.Time
	if d, err := time.ParseDuration(*before); err == nil {
		if d <= 0 {
			return e.usageError(c, "-finished-before: the duration must be positive")
		}
		cut = now.Add(-d)
	} else if t, err := time.Parse(time.RFC3339Nano, *before); err == nil {
		cut = t
	} else {
		return e.usageError(c, fmt.Sprintf("-finished-before: %q is neither a duration (720h) nor an RFC 3339 time", clip(*before, 60)))
	}
	var statuses []agentrt.RunStatus
	if *statusArg != "" {
		for _, s := range strings.Split(*statusArg, ",") {
			st := agentrt.RunStatus(strings.ToUpper(strings.TrimSpace(s)))
			if !st.Terminal() {
				return e.usageError(c, fmt.Sprintf("-status: %q is not a status a run ends in (COMPLETED, FAILED, CANCELLED)", clip(s, 40)))
			}
			statuses = append(statuses, st)
		}
	}
	if *batch < 1 || *batch > agentrt.MaxEraseBatch {
		return e.usageError(c, fmt.Sprintf("-batch must be 1 to %d", agentrt.MaxEraseBatch))
	}
	e.defaultBy(fs, by)
	if *by == "" && !*dry {
		return e.usageError(c, "no one to record as erasing: pass -by WHO (a label, recorded as given), since neither USER nor the system's user database names this account")
	}
	if *reason == "" {
		return e.usageError(c, "-reason must not be empty")
	}
	st, name, code := g.openDB(e, c, *dry)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	ctx := background()
	op := agentrt.Operator{Store: st, Now: e.now}
	loud := e.progress != nil && e.progress(e.stderr)
	erased := 0
	res, err := op.Retain(ctx, agentrt.RetainOptions{FinishedBefore: cut, Statuses: statuses, Batch: *batch, By: *by, Reason: *reason, DryRun: *dry,
		Progress: func(b []agentrt.ErasedRun) error {
			erased += len(b)
			if loud {
				fmt.Fprintf(e.stderr, "\rretain: %d run(s) erased", erased)
			}
			return nil
		}})
	if loud {
		fmt.Fprint(e.stderr, "\r\x1b[K")
	}
	switch {
	case errors.Is(err, sqlite.ErrWALRetained):
		fmt.Fprintln(e.stderr, "agentrt: note: "+trace.Sanitize(err.Error())+"; run retain again when readers are done to empty it.")
	case err != nil:
		return e.fail("retention in %s stopped after %d run(s): %v", name, res.Erased, err)
	}
	rep := retainReport{Cut: cut.UTC(), DryRun: *dry, RetainReport: res}
	p := &printer{w: e.stdout}
	if g.json {
		writeJSON(p, rep)
		return e.done(p, ExitOK)
	}
	cutText := rep.Cut.Format(time.RFC3339)
	if *dry {
		p.printf("would erase %d run(s) that ended before %s\n", len(rep.Would), cutText)
		for _, id := range rep.Would {
			p.printf("  %s\n", clip(id, 64))
		}
	} else {
		p.printf("erased %d run(s) (%d event payloads) that ended before %s, in %d batch(es)\n", rep.Erased, rep.Events, cutText, rep.Batches)
	}
	for _, r := range rep.Refused {
		p.printf("refused %s: %s\n", clip(r.RunID, 64), clip(r.Reason, 200))
	}
	if _, isSQLite := st.(*sqlite.Store); !isSQLite && !*dry && rep.Erased > 0 {
		p.printf("%s\n", postgresNote)
	}
	return e.done(p, ExitOK)
}
