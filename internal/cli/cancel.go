package cli

import (
	"errors"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/view"
)

var cancelCommand = &command{
	name:    "cancel",
	summary: "cancel a run that has not ended",
	usage:   "<run> [-by WHO] [-note TEXT]",
	run:     runCancel,
}

func runCancel(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	by := fs.String("by", "", "a label for who cancelled, recorded as given (default $USER, else your account's name)")
	note := fs.String("note", "", "a note recorded with the cancellation")
	runID, code, ok := e.parseRun(c, fs, args)
	if !ok {
		return code
	}
	if code, ok := e.requireBy(c, fs, by, "cancelling"); !ok {
		return code
	}
	st, where, code := g.openDB(e, c, false)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	if runID, code, ok = e.resolveRun(st, where, runID); !ok {
		return code
	}

	ctx := background()
	op := agentrt.Operator{Store: st, Now: e.now}
	if !g.json {
		op.Observer = eventlog.Writer(e.stderr)
	}
	if _, err := op.Cancel(ctx, runID, *by, *note); err != nil {
		if errors.Is(err, agentrt.ErrRunState) {
			if r, rerr := st.GetRunCapped(ctx, runID); rerr == nil {
				return e.fail("run %s already ended (%s); nothing was changed", runID, r.Status)
			}
		}
		if errors.Is(err, agentrt.ErrNotFound) {
			return e.fail("no run %s in %s", runID, where)
		}
		return e.decideError(runID, "", err)
	}
	run, err := view.Summary(ctx, st, runID)
	if err != nil {
		return e.fail("run %s was cancelled, but reading it back failed: %v", runID, err)
	}
	p := &printer{w: e.stdout}
	if g.json {
		writeJSON(p, struct {
			Run view.RunSummary `json:"run"`
		}{run})
		return e.done(p, ExitOK)
	}
	p.printf("run %s: %s (%s) by %s\n", clip(run.ID, 64), clip(string(run.Status), 40), clip(string(run.Reason), 40), bounded(*by))
	return e.done(p, ExitOK)
}
