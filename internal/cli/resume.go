package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
)

var resumeCommand = &command{
	name:    "resume",
	summary: "resume a run that agentrt demo started, once its write is decided",
	usage:   "-workspace DIR [-agent model|scripted] <run>",
	run:     runResume,
}

func runResume(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	ws := fs.String("workspace", "", "the demo's workspace, as demo printed it")
	kind := fs.String("agent", agentModel, "model or scripted, as the demo ran")
	runID, code, ok := e.parseRun(c, fs, args)
	if !ok {
		return code
	}
	if *ws == "" {
		return e.usageError(c, "missing -workspace DIR, the workspace demo printed")
	}
	if *kind != agentModel && *kind != agentScripted {
		return e.usageError(c, fmt.Sprintf("-agent must be %s or %s, got %q", agentModel, agentScripted, clip(*kind, 40)))
	}
	path, code := g.requireDB(e, c)
	if code != ExitOK {
		return code
	}
	if fi, err := os.Lstat(*ws); err != nil || !fi.IsDir() {
		return e.fail("%s is not the demo's workspace directory", *ws)
	}
	st, code := e.open(path, false)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	if runID, code, ok = e.resolveRun(st, backend.Redact(path), runID); !ok {
		return code
	}

	ctx := background()
	r, err := st.GetRunCapped(ctx, runID)
	if errors.Is(err, agentrt.ErrNotFound) {
		return e.fail("no run %s in %s", runID, backend.Redact(path))
	}
	if err != nil {
		return e.fail("reading run %s: %v", runID, err)
	}
	if r.Goal != demoGoal {
		return e.fail("run %s was not started by agentrt demo; resuming it belongs to the program that started it, with its own agent, tools and policy", runID)
	}
	if r.Status.Terminal() {
		return e.fail("run %s already ended (%s); there is nothing to resume", runID, r.Status)
	}
	db := clean(shellQuote(path))
	rid := clean(shellQuote(runID))
	p := &printer{w: e.stdout}
	if r.Status == agentrt.RunWaiting {
		if _, pending, err := st.ListApprovalsPage(ctx, runID, agentrt.ApprovalPending, 1, 0); err != nil {
			return e.fail("reading the approvals of run %s: %v", runID, err)
		} else if pending > 0 {
			p.printf("run %s is still waiting: its write has not been approved. Approve it first:\n\n  %s -db %s approve %s\n", clip(runID, 64), e.prog, db, rid)
			return e.done(p, ExitFailure)
		}
	}
	agent, model, stop, err := demoAgent(*kind, r.StepCount)
	if err != nil {
		return e.fail("starting the demo's model: %v", err)
	}
	defer stop()
	drv, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: e.demoEngine(st, model, *ws, "agentrt-demo"),
		Agent:        agent,
	})
	if err != nil {
		return e.fail("setting up the demo's driver: %v", err)
	}
	run, err := drv.Resume(ctx, runID)
	if err != nil {
		if errors.Is(err, agentrt.ErrRunState) {
			return e.fail("run %s cannot be resumed now: %v", runID, err)
		}
		return e.fail("resuming run %s: %v", runID, err)
	}
	if run.Status == agentrt.RunWaiting {
		p.printf("run %s is still waiting: its approval has not been granted. Approve it first:\n\n  %s -db %s approve %s\n", clip(runID, 64), e.prog, db, rid)
		return e.done(p, ExitFailure)
	}
	p.printf("run %s: %s (%s) after %d steps\n\n", clip(runID, 64), run.Status, run.Reason, run.StepCount)
	// The run as show prints it, as the demo ends: the step table a person
	// reads, not the raw events (agentrt events still prints those).
	e.demoSteps(p, path, runID)
	rep, err := verifyChain(e, st, 0, 0, nil)
	if err != nil {
		return e.fail("verifying %s: %v", backend.Redact(path), err)
	}
	p.printf("\nverify (%s -db %s verify):\n", e.prog, db)
	writeVerify(p, rep)
	exit := ExitOK
	if run.Status != agentrt.RunCompleted || !rep.OK {
		exit = ExitFailure
	}
	return e.done(p, exit)
}
