package cli

import (
	"errors"
	"flag"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/view"
)

var cancelCommand = fromKit(&kitCmd{
	Name:    "cancel",
	Summary: "cancel a run that has not ended",
	Usage:   "<run> [-by WHO] [-note TEXT]",
	Bind:    cliflag.With(cancelFlags, runCancel),
})

// cancelOptions are cancel's flags.
type cancelOptions struct {
	by   byFlag
	note string
}

func cancelFlags(fs *flag.FlagSet, o *cancelOptions) {
	fs.Var(&o.by, "by", "a label for who cancelled, recorded as given (default $USER, else your account's name)")
	fs.StringVar(&o.note, "note", "", "a note recorded with the cancellation")
}

func runCancel(x *inv, o *cancelOptions, pos []string) int {
	typed, by, code := x.runAndBy(pos, &o.by, " as cancelling")
	if code != ExitOK {
		return code
	}
	st, where, runID, code := x.openRunToChange(typed)
	if code != ExitOK {
		return code
	}
	defer st.Close()

	ctx := background()
	op := agentrt.Operator{Store: st, Now: x.now}
	if !x.g.json {
		op.Observer = eventlog.Writer(x.stderr)
	}
	if _, err := op.Cancel(ctx, runID, by, o.note); err != nil {
		if errors.Is(err, agentrt.ErrRunState) {
			if r, rerr := st.GetRunCapped(ctx, runID); rerr == nil {
				return x.fail("run %s already ended (%s); nothing was changed", runID, r.Status)
			}
		}
		if errors.Is(err, agentrt.ErrNotFound) {
			return x.fail("no run %s in %s", runID, where)
		}
		return x.decideError(runID, "", err)
	}
	run, err := view.Summary(ctx, st, runID)
	if err != nil {
		return x.fail("run %s was cancelled, but reading it back failed: %v", runID, err)
	}
	p := &printer{w: x.stdout}
	if x.g.json {
		writeJSON(p, struct {
			Run view.RunSummary `json:"run"`
		}{run})
		return x.done(p, ExitOK)
	}
	p.printf("run %s: %s (%s) by %s\n", clip(run.ID, 64), clip(string(run.Status), 40), clip(string(run.Reason), 40), bounded(by))
	return x.done(p, ExitOK)
}
