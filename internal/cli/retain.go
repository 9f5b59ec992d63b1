package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/trace"
)

var retainCommand = fromKit(&kitCmd{
	Name:    "retain",
	Summary: "erase the content of every run that ended before a cut, oldest first, in bounded batches",
	Usage:   "-finished-before DURATION|TIME [-status S,...] [-dry-run] [-by WHO] [-reason TEXT] [-batch N]",
	Bind:    cliflag.With(retainFlags, runRetain),
})

type retainReport struct {
	Cut    time.Time `json:"cut"`
	DryRun bool      `json:"dry_run"`
	agentrt.RetainReport
}

// retainOptions are retain's flags.
type retainOptions struct {
	before, status, reason string
	dry                    bool
	by                     byFlag
	batch                  int
}

func retainFlags(fs *flag.FlagSet, o *retainOptions) {
	fs.StringVar(&o.before, "finished-before", "", "erase runs that ended before this: a duration ago (720h) or an RFC 3339 time")
	fs.StringVar(&o.status, "status", "", "only runs ending in these statuses, comma-separated (COMPLETED,FAILED,CANCELLED)")
	fs.BoolVar(&o.dry, "dry-run", false, "list the runs that would be erased and change nothing")
	fs.Var(&o.by, "by", "who erases, recorded in each run.erased event (default $USER, else your account's name)")
	fs.StringVar(&o.reason, "reason", "retention", "why, recorded in each run.erased event")
	fs.IntVar(&o.batch, "batch", agentrt.DefaultRetainBatch, fmt.Sprintf("runs erased per transaction, 1 to %d", agentrt.MaxEraseBatch))
}

func runRetain(x *inv, o *retainOptions, pos []string) int {
	ro, code := x.retainPlan(o, pos)
	if code != ExitOK {
		return code
	}
	st, name, code := x.g.openDB(x.env, x.c, o.dry)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	res, err := x.retain(st, ro)
	switch {
	case errors.Is(err, sqlite.ErrWALRetained):
		fmt.Fprintln(x.stderr, "agentrt: note: "+trace.Sanitize(err.Error())+"; run retain again when readers are done to empty it.")
	case err != nil:
		return x.fail("retention in %s stopped after %d run(s): %v", name, res.Erased, err)
	}
	_, isSQLite := st.(*sqlite.Store)
	return x.printRetained(retainReport{Cut: ro.FinishedBefore.UTC(), DryRun: o.dry, RetainReport: res}, !isSQLite)
}

// retainPlan checks every flag and turns them into the operator's
// options; a code other than ExitOK is a usage error already printed.
func (x *inv) retainPlan(o *retainOptions, pos []string) (agentrt.RetainOptions, int) {
	if len(pos) > 0 {
		return agentrt.RetainOptions{}, x.usageError(x.c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	cut, msg := retainCut(o.before, x.clockLocal())
	statuses, smsg := terminalStatuses(o.status)
	by := o.by.name(x.env)
	switch {
	case msg != "":
	case smsg != "":
		msg = smsg
	case checkBatch(o.batch) != "":
		msg = checkBatch(o.batch)
	case by == "" && !o.dry:
		msg = "no one to record as erasing: pass -by WHO (a label, recorded as given), since neither USER nor the system's user database names this account"
	case o.reason == "":
		msg = "-reason must not be empty"
	}
	if msg != "" {
		return agentrt.RetainOptions{}, x.usageError(x.c, msg)
	}
	return agentrt.RetainOptions{FinishedBefore: cut, Statuses: statuses, Batch: o.batch, By: by, Reason: o.reason, DryRun: o.dry}, ExitOK
}

// retainCut is the cut -finished-before names: a positive duration before
// now, or an RFC 3339 time. msg says what is wrong with it, if anything.
func retainCut(before string, now time.Time) (cut time.Time, msg string) {
	if before == "" {
		return cut, "-finished-before is required: a duration ago (720h) or an RFC 3339 time"
	}
	if d, err := time.ParseDuration(before); err == nil {
		if d <= 0 {
			return cut, "-finished-before: the duration must be positive"
		}
		return now.Add(-d), ""
	}
	if t, err := time.Parse(time.RFC3339Nano, before); err == nil {
		return t, ""
	}
	return cut, fmt.Sprintf("-finished-before: %q is neither a duration (720h) nor an RFC 3339 time", clip(before, 60))
}

func checkBatch(n int) string {
	if n < 1 || n > agentrt.MaxEraseBatch {
		return fmt.Sprintf("-batch must be 1 to %d", agentrt.MaxEraseBatch)
	}
	return ""
}

// terminalStatuses parses -status: statuses a run ends in, comma-separated.
func terminalStatuses(arg string) ([]agentrt.RunStatus, string) {
	if arg == "" {
		return nil, ""
	}
	var out []agentrt.RunStatus
	for _, s := range strings.Split(arg, ",") {
		st := agentrt.RunStatus(strings.ToUpper(strings.TrimSpace(s)))
		if !st.Terminal() {
			return nil, fmt.Sprintf("-status: %q is not a status a run ends in (COMPLETED, FAILED, CANCELLED)", clip(s, 40))
		}
		out = append(out, st)
	}
	return out, ""
}

// clockLocal is the env's clock in its own zone, or the wall clock.
func (e *env) clockLocal() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// retain runs the operator's retention, counting erased runs on stderr
// when it is a terminal.
func (x *inv) retain(st agentrt.Store, ro agentrt.RetainOptions) (agentrt.RetainReport, error) {
	op := agentrt.Operator{Store: st, Now: x.now}
	loud := x.progress != nil && x.progress(x.stderr)
	erased := 0
	ro.Progress = func(b []agentrt.ErasedRun) error {
		erased += len(b)
		if loud {
			fmt.Fprintf(x.stderr, "\rretain: %d run(s) erased", erased)
		}
		return nil
	}
	res, err := op.Retain(background(), ro)
	if loud {
		fmt.Fprint(x.stderr, "\r\x1b[K")
	}
	return res, err
}

// printRetained prints what retention did or would do; server says the
// backend is a database server (whose space a vacuum returns).
func (x *inv) printRetained(rep retainReport, server bool) int {
	p := &printer{w: x.stdout}
	if x.g.json {
		writeJSON(p, rep)
		return x.done(p, ExitOK)
	}
	cutText := rep.Cut.Format(time.RFC3339)
	if rep.DryRun {
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
	if server && !rep.DryRun && rep.Erased > 0 {
		p.printf("%s\n", postgresNote)
	}
	return x.done(p, ExitOK)
}
