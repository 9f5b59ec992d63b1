package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/internal/cliflag"
)

var resumeCommand = fromKit(&kitCmd{
	Name:    "resume",
	Summary: "resume a run that agentrt demo started, once its write is decided",
	Usage:   "-workspace DIR [-agent model|scripted] <run>",
	Bind: cliflag.With(func(fs *flag.FlagSet, o *resumeOptions) {
		fs.StringVar(&o.workspace, "workspace", "", "the demo's workspace, as demo printed it")
		fs.StringVar(&o.agent, "agent", agentModel, "model or scripted, as the demo ran")
	}, runResume),
})

// resumeOptions are resume's flags.
type resumeOptions struct{ workspace, agent string }

// demoResume is a demo run being resumed: the database it is in (path as
// given, db and rid quoted for a printed command line) and the run.
type demoResume struct {
	st      agentrt.Store
	path    string
	db, rid string
	run     agentrt.Run
	out     *printer
}

func runResume(x *inv, o *resumeOptions, pos []string) int {
	runID, code := x.checkResume(o, pos)
	if code != ExitOK {
		return code
	}
	path := x.g.path(x.env)
	st, code := x.open(path, false)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	dr, code := x.demoRunToResume(st, path, runID)
	if code != ExitOK {
		return code
	}
	run, code := x.driveDemo(dr, o)
	if code != ExitOK {
		return code
	}
	return x.reportResumed(dr, run)
}

// checkResume checks resume's arguments before anything is opened and
// returns the run id as typed.
func (x *inv) checkResume(o *resumeOptions, pos []string) (string, int) {
	runID, msg := oneRunID(pos)
	switch {
	case msg != "":
		return "", x.usageError(x.c, msg)
	case o.workspace == "":
		return "", x.usageError(x.c, "missing -workspace DIR, the workspace demo printed")
	case o.agent != agentModel && o.agent != agentScripted:
		return "", x.usageError(x.c, fmt.Sprintf("-agent must be %s or %s, got %q", agentModel, agentScripted, clip(o.agent, 40)))
	}
	if _, code := x.g.requireDB(x.env, x.c); code != ExitOK {
		return "", code
	}
	if fi, err := os.Lstat(o.workspace); err != nil || !fi.IsDir() {
		return "", x.fail("%s is not the demo's workspace directory", o.workspace)
	}
	return runID, ExitOK
}

// demoRunToResume reads the run typed and refuses one the demo did not
// start, one that ended, and one whose write still waits for approval.
func (x *inv) demoRunToResume(st agentrt.Store, path, typed string) (demoResume, int) {
	runID, code, ok := x.resolveRun(st, backend.Redact(path), typed)
	if !ok {
		return demoResume{}, code
	}
	ctx := background()
	r, err := st.GetRunCapped(ctx, runID)
	switch {
	case errors.Is(err, agentrt.ErrNotFound):
		return demoResume{}, x.fail("no run %s in %s", runID, backend.Redact(path))
	case err != nil:
		return demoResume{}, x.fail("reading run %s: %v", runID, err)
	case r.Goal != demoGoal:
		return demoResume{}, x.fail("run %s was not started by agentrt demo; resuming it belongs to the program that started it, with its own agent, tools and policy", runID)
	case r.Status.Terminal():
		return demoResume{}, x.fail("run %s already ended (%s); there is nothing to resume", runID, r.Status)
	}
	dr := demoResume{st: st, path: path, db: clean(shellQuote(path)), rid: clean(shellQuote(runID)), run: r, out: &printer{w: x.stdout}}
	if r.Status == agentrt.RunWaiting {
		if _, pending, err := st.ListApprovalsPage(ctx, runID, agentrt.ApprovalPending, 1, 0); err != nil {
			return demoResume{}, x.fail("reading the approvals of run %s: %v", runID, err)
		} else if pending > 0 {
			dr.out.printf("run %s is still waiting: its write has not been approved. Approve it first:\n\n  %s -db %s approve %s\n", clip(runID, 64), x.prog, dr.db, dr.rid)
			return demoResume{}, x.done(dr.out, ExitFailure)
		}
	}
	return dr, ExitOK
}

// driveDemo resumes the run with the demo's agent, tools and policy.
func (x *inv) driveDemo(dr demoResume, o *resumeOptions) (agentrt.Run, int) {
	runID := dr.run.ID
	agent, model, stop, err := demoAgent(o.agent, dr.run.StepCount)
	if err != nil {
		return agentrt.Run{}, x.fail("starting the demo's model: %v", err)
	}
	defer stop()
	drv, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: x.demoEngine(dr.st, model, o.workspace, "agentrt-demo"),
		Agent:        agent,
	})
	if err != nil {
		return agentrt.Run{}, x.fail("setting up the demo's driver: %v", err)
	}
	run, err := drv.Resume(background(), runID)
	switch {
	case errors.Is(err, agentrt.ErrRunState):
		return agentrt.Run{}, x.fail("run %s cannot be resumed now: %v", runID, err)
	case err != nil:
		return agentrt.Run{}, x.fail("resuming run %s: %v", runID, err)
	case run.Status == agentrt.RunWaiting:
		dr.out.printf("run %s is still waiting: its approval has not been granted. Approve it first:\n\n  %s -db %s approve %s\n", clip(runID, 64), x.prog, dr.db, dr.rid)
		return agentrt.Run{}, x.done(dr.out, ExitFailure)
	}
	return run, ExitOK
}

// reportResumed prints how the run ended, its steps as show prints them
// (not the raw events, which agentrt events prints) and verify's result.
func (x *inv) reportResumed(dr demoResume, run agentrt.Run) int {
	p := dr.out
	p.printf("run %s: %s (%s) after %d steps\n\n", clip(run.ID, 64), run.Status, run.Reason, run.StepCount)
	x.demoSteps(p, dr.path, run.ID)
	rep, err := verifyChain(x.env, dr.st, 0, 0, nil)
	if err != nil {
		return x.fail("verifying %s: %v", backend.Redact(dr.path), err)
	}
	p.printf("\nverify (%s -db %s verify):\n", x.prog, dr.db)
	writeVerify(p, rep)
	exit := ExitOK
	if run.Status != agentrt.RunCompleted || !rep.OK {
		exit = ExitFailure
	}
	return x.done(p, exit)
}
