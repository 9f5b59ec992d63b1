package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

var retainCommand = &command{
	name:    "retain",
	summary: "erase the content of every run that ended before a cut, oldest first, in bounded batches",
	usage:   "-finished-before DURATION|TIME [-status S,...] [-dry-run] [-by WHO] [-reason TEXT] [-batch N]",
	run:     runRetain,
}

const defaultRetainBatch = 100

type retainReport struct {
	Cut     time.Time `json:"cut"`
	DryRun  bool      `json:"dry_run"`
	Erased  int       `json:"erased"`
	Batches int       `json:"batches"`
	Events  int       `json:"events"`
	// Would lists, for -dry-run, the runs that would be erased.
	Would []string `json:"would,omitempty"`
	// Refused lists runs the store would not erase, and why.
	Refused []retainRefusal `json:"refused,omitempty"`
}

type retainRefusal struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

func runRetain(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	before := fs.String("finished-before", "", "erase runs that ended before this: a duration ago (720h) or an RFC 3339 time")
	statusArg := fs.String("status", "", "only runs ending in these statuses, comma-separated (COMPLETED,FAILED,CANCELLED)")
	dry := fs.Bool("dry-run", false, "list the runs that would be erased and change nothing")
	by := fs.String("by", "", "who erases, recorded in each run.erased event (default $USER)")
	reason := fs.String("reason", "retention", "why, recorded in each run.erased event")
	batch := fs.Int("batch", defaultRetainBatch, fmt.Sprintf("runs erased per transaction, 1 to %d", agentrt.MaxEraseBatch))
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
	if !flagGiven(fs, "by") {
		*by = e.getenv("USER")
	}
	if *by == "" && !*dry {
		return e.usageError(c, "no one to record as erasing: pass -by WHO or set USER")
	}
	if *reason == "" {
		return e.usageError(c, "-reason must not be empty")
	}
	path, code := g.requireDB(e, c)
	if code != ExitOK {
		return code
	}
	var st agentrt.Store
	var name string
	if *dry {
		st, name, code = e.openReader(path)
	} else {
		st, name, code = e.openWriter(path)
	}
	if code != ExitOK {
		return code
	}
	defer st.Close()
	er, ok := st.(agentrt.Eraser)
	if !ok {
		return e.fail("%s cannot erase content; nothing was changed", name)
	}
	ctx := background()
	op := agentrt.Operator{Store: st, Now: e.now}
	rep := retainReport{Cut: cut.UTC(), DryRun: *dry}
	loud := e.progress != nil && e.progress(e.stderr)
	for offset := 0; ; {
		runs, err := er.ErasableRuns(ctx, agentrt.ErasableQuery{FinishedBefore: cut, Statuses: statuses, Limit: *batch, Offset: offset})
		if err != nil {
			return e.fail("listing runs to erase in %s: %v", name, err)
		}
		if len(runs) == 0 {
			break
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		if *dry {
			rep.Would = append(rep.Would, ids...)
			offset += len(ids)
			continue
		}
		out, err := op.EraseRuns(ctx, ids, *by, *reason)
		if err != nil && !errors.Is(err, sqlite.ErrWALRetained) {
			// One run the store refuses fails its batch: erase the batch
			// run by run, and skip the refused ones from now on.
			out = out[:0]
			for _, id := range ids {
				r, err := op.Erase(ctx, id, *by, *reason)
				if err != nil && !errors.Is(err, sqlite.ErrWALRetained) {
					rep.Refused = append(rep.Refused, retainRefusal{id, trimAgentrt(err)})
					offset++
					continue
				}
				out = append(out, r)
			}
		}
		rep.Batches++
		rep.Erased += len(out)
		for _, r := range out {
			rep.Events += r.Events
		}
		if loud {
			fmt.Fprintf(e.stderr, "\rretain: %d run(s) erased", rep.Erased)
		}
	}
	if loud {
		fmt.Fprint(e.stderr, "\r\x1b[K")
	}
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
