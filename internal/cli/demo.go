package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/view"
)

var demoCommand = fromKit(&kitCmd{
	Name:    "demo",
	Summary: "run an agent on a scratch workspace; a write waits for your approval",
	Usage:   "[-auto-approve] [-agent model|scripted]",
	Bind: cliflag.With(func(fs *flag.FlagSet, o *demoFlags) {
		fs.BoolVar(&o.auto, "auto-approve", false, "play the operator too: approve, resume, and print the trail and verify's result")
		fs.StringVar(&o.agent, "agent", agentModel, "model or scripted")
	}, runDemo),
})

// demoFlags are demo's flags.
type demoFlags struct {
	auto  bool
	agent string
}

// demoOptions are what tests fix about the demo so its output is stable.
type demoOptions struct {
	now     func() time.Time // the driver's clock; nil is the wall clock
	newID   func() string    // run, step and approval ids; nil is random
	tempDir string           // where the demo's directory is made; "" is os.TempDir
}

// demoOperator is who -auto-approve records as deciding.
const demoOperator = "demo-operator"

// demoSession is one demo: its database and workspace, the agent and
// model it runs, and what it prints on.
type demoSession struct {
	x      *inv
	o      *demoFlags
	st     *sqlite.Store
	dbPath string
	ws     string
	db     string // dbPath quoted for a printed command line
	agent  agentrt.Agent
	model  *agentrt.ModelConfig
	p      *printer
}

func runDemo(x *inv, o *demoFlags, pos []string) int {
	dbPath, code := x.checkDemo(o, pos)
	if code != ExitOK {
		return code
	}
	ds, done, code := x.newDemo(o, dbPath)
	if code != ExitOK {
		return code
	}
	defer done()
	drv, code := ds.setUp()
	if code != ExitOK {
		return code
	}
	run, a, code := ds.start(drv)
	if code != ExitOK || !o.auto {
		return code
	}
	run, code = ds.approveAndContinue(run, a)
	if code != ExitOK {
		return code
	}
	return ds.finish(run)
}

// checkDemo checks demo's arguments and returns the database it may
// create: -db, never $AGENTRT_DB, and never one that exists ("" is one in
// the demo's directory).
func (x *inv) checkDemo(o *demoFlags, pos []string) (string, int) {
	if len(pos) > 0 {
		return "", x.usageError(x.c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if o.agent != agentModel && o.agent != agentScripted {
		return "", x.usageError(x.c, fmt.Sprintf("-agent must be %s or %s, got %q", agentModel, agentScripted, clip(o.agent, 40)))
	}
	dbPath := x.g.db
	if s, _, err := backend.Scheme(dbPath); dbPath != "" && (err != nil || s != backend.FileScheme) {
		return "", x.fail("refusing %s: the demo runs on a new SQLite file it creates, so pass -db PATH (or no -db)", backend.Redact(dbPath))
	}
	if dbPath != "" {
		if _, err := os.Lstat(dbPath); !errors.Is(err, fs.ErrNotExist) {
			return "", x.fail("refusing %s: it exists, and the demo only creates a new database", dbPath)
		}
	}
	return dbPath, ExitOK
}

// newDemo makes the demo's directory, workspace and database and starts
// its agent; done closes them.
func (x *inv) newDemo(o *demoFlags, dbPath string) (ds *demoSession, done func(), code int) {
	dir, err := os.MkdirTemp(x.demo.tempDir, "agentrt-demo-")
	if err != nil {
		return nil, nil, x.fail("making the demo's directory: %v", err)
	}
	ws := filepath.Join(dir, "workspace")
	if err := makeWorkspace(ws); err != nil {
		return nil, nil, x.fail("making the demo's workspace: %v", err)
	}
	if dbPath == "" {
		dbPath = filepath.Join(dir, "runs.db")
	}
	st, err := sqlite.Open(dbPath)
	if err != nil {
		fmt.Fprintln(x.stderr, "agentrt: "+openRefusal(dbPath, err))
		return nil, nil, ExitFailure
	}
	agent, model, stop, err := demoAgent(o.agent, 0)
	if err != nil {
		st.Close()
		return nil, nil, x.fail("starting the demo's model: %v", err)
	}
	ds = &demoSession{x: x, o: o, st: st, dbPath: dbPath, ws: ws, db: clean(shellQuote(dbPath)),
		agent: agent, model: model, p: &printer{w: x.stdout}}
	return ds, func() { stop(); st.Close() }, ExitOK
}

// setUp makes the demo's driver and prints what the demo is made of,
// adding the budget its model calls fall under.
func (ds *demoSession) setUp() (*agentrt.Driver, int) {
	x, p := ds.x, ds.p
	drv, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: x.demoEngine(ds.st, ds.model, ds.ws, "agentrt-demo"),
		Agent:        ds.agent,
	})
	if err != nil {
		return nil, x.fail("setting up the demo's driver: %v", err)
	}
	p.printf("agentrt demo: an agent works on a scratch workspace. Reads are allowed; a write waits for an operator.\n")
	p.printf("  workspace  %s (notes.txt, todo.txt)\n", clean(ds.ws))
	p.printf("  database   %s\n", clean(ds.dbPath))
	if ds.o.agent == agentModel {
		p.printf("  agent      render.Agent -> providers/openai -> a scripted Chat Completions server on 127.0.0.1 (no network, no key)\n")
	} else {
		p.printf("  agent      a scripted agent making the model's decisions (no model)\n")
	}
	if ds.model != nil {
		// Each model call reserves against the budget before it is sent
		// and settles after.
		if _, err := (agentrt.Operator{Store: ds.st, Now: x.demo.now}).AddBudget(background(), agentrt.NewBudget{Name: demoBudget,
			Scope: demoScope, Window: agentrt.WindowDay, MaxCost: demoBudgetCost, By: demoOperator}); err != nil {
			return nil, x.fail("adding the demo's budget: %v", err)
		}
		p.printf("  budget     %s: runs labelled %s may spend %s a day; each model call reserves before it is sent\n", demoBudget, demoScope, demoBudgetCost.Dollars())
	}
	p.printf("  goal       %s\n\n", demoGoal)
	return drv, ExitOK
}

// start runs the demo until its write waits for an operator and prints
// the approval; without -auto-approve it then prints how to go on, and
// code is the command's exit.
func (ds *demoSession) start(drv *agentrt.Driver) (agentrt.Run, agentrt.Approval, int) {
	x, p := ds.x, ds.p
	ctx := background()
	x.demoProgress("starting the run: the agent lists and reads the workspace, then asks to write")
	run, err := drv.Start(ctx, demoGoal, demoLimits())
	if err != nil {
		return run, agentrt.Approval{}, x.fail("running the demo: %v", err)
	}
	if run.Status != agentrt.RunWaiting {
		p.printf("run %s ended before its write: %s (%s: %s)\n\n", clip(run.ID, 64), run.Status, run.Reason, capped(run.ReasonDetail, textClipBytes))
		x.demoSteps(p, ds.dbPath, run.ID)
		return run, agentrt.Approval{}, x.done(p, ExitFailure)
	}
	a, err := view.PendingApproval(ctx, ds.st, run.ID, "")
	if err != nil {
		return run, a, x.fail("reading the demo's approval: %v", err)
	}
	p.printf("run %s is %s after %d steps: it listed and read the workspace, then asked to write, and the policy sent the write to an operator.\n\n",
		clip(run.ID, 64), run.Status, run.StepCount)
	writeApproval(p, a, blockOptions{})
	if !ds.o.auto {
		ds.printNextSteps(run.ID)
		return run, a, x.done(p, ExitOK)
	}
	return run, a, ExitOK
}

// printNextSteps prints the commands that approve and resume the run, or
// refuse it.
func (ds *demoSession) printNextSteps(runID string) {
	x, p := ds.x, ds.p
	rid := clean(shellQuote(runID))
	agentFlag := ""
	if ds.o.agent != agentModel {
		agentFlag = " -agent " + ds.o.agent
	}
	p.printf("\nTo continue, approve the write (agentrt prints it again and asks you to type yes), then resume the run:\n\n")
	p.printf("  %s -db %s approve %s\n", x.prog, ds.db, rid)
	p.printf("  %s -db %s resume -workspace %s%s %s\n\n", x.prog, ds.db, clean(shellQuote(ds.ws)), agentFlag, rid)
	p.printf("Or refuse it, which cancels the run:\n\n  %s -db %s reject %s\n", x.prog, ds.db, rid)
}

// approveAndContinue plays the operator, deciding on exactly what was
// printed, and lets a worker polling the database claim the approved run
// and carry it on, as a pool of workers would: nobody calls Resume.
func (ds *demoSession) approveAndContinue(run agentrt.Run, a agentrt.Approval) (agentrt.Run, int) {
	x := ds.x
	shown, err := agentrt.ApprovalHashWith(a.Kind, a.Capability, a.Presentation, a.Request, a.Requirement, a.PolicyVersion)
	if err != nil || shown != a.Hash {
		return run, x.fail("approval %s does not match its own hash; nothing was decided", a.ID)
	}
	ctx := background()
	op := agentrt.Operator{Store: ds.st, Now: x.demo.now}
	if err := op.ApproveShown(ctx, run.ID, a.ID, shown, demoOperator, "approved by agentrt demo -auto-approve"); err != nil {
		return run, x.decideError(run.ID, a.ID, err)
	}
	ds.p.printf("\napproved: approval %s by %s, bound to hash %s, the hash of the block above\n", clip(a.ID, 64), demoOperator, shown)
	x.demoProgress("approved; waiting for a worker to claim the run and finish it")
	run, err = demoWorker(ctx, ds.st, ds.agent, ds.model, ds.ws, x.env, run.ID)
	if err != nil {
		return run, x.fail("continuing the demo's run: %v", err)
	}
	return run, ExitOK
}

// finish prints how the run ended, what it spent and wrote, its steps and
// verify's result, and where to look next.
func (ds *demoSession) finish(run agentrt.Run) int {
	x, p := ds.x, ds.p
	exit := ExitOK
	if run.Status != agentrt.RunCompleted {
		exit = ExitFailure
	}
	p.printf("resumed by a worker: run %s is %s (%s) after %d steps; no one called Resume\n", clip(run.ID, 64), run.Status, run.Reason, run.StepCount)
	if run.ModelCalls > 0 {
		p.printf("model: %d call(s), %d tokens in, %d out, estimated %s at the demo's invented prices\n",
			run.ModelCalls, run.Usage.InputTokens, run.Usage.OutputTokens, run.EstimatedCost.Dollars())
	}
	if ds.model != nil {
		p.printf("budget %s holds what the calls settled at (%s -db %s budgets show %s)\n", demoBudget, x.prog, ds.db, demoBudget)
	}
	if b, err := os.ReadFile(filepath.Join(ds.ws, "summary.md")); err == nil {
		p.printf("summary.md in the workspace holds %d bytes, the content approved above\n", len(b))
	}
	p.printf("\n")
	x.demoSteps(p, ds.dbPath, run.ID)
	p.printf("\nverify (%s -db %s verify):\n", x.prog, ds.db)
	x.demoProgress("verifying the database's hash chain")
	rep, err := verifyChain(x.env, ds.st, 0, 0, nil)
	if err != nil {
		return x.fail("verifying the demo's database: %v", err)
	}
	writeVerify(p, rep)
	if !rep.OK {
		exit = ExitFailure
	}
	p.printf("\nKeep that head where the database's writers cannot reach it; later,\n")
	p.printf("  %s -db %s verify -head %d:%s\n", x.prog, ds.db, rep.Head.Seq, rep.Head.Hash)
	p.printf("fails unless the chain still reaches it. Look around with:\n")
	rid := clean(shellQuote(run.ID))
	for _, cmd := range []string{"runs", "show " + rid, "events " + rid} {
		p.printf("  %s -db %s %s\n", x.prog, ds.db, cmd)
	}
	return x.done(p, exit)
}

// demoSteps prints the run as agentrt show does, under the command that
// prints it again: the step table a person reads, where the raw events
// were a wall of JSON (agentrt events still prints those).
func (e *env) demoSteps(p *printer, dbPath, runID string) {
	p.printf("steps (%s -db %s show %s):\n", e.prog, clean(shellQuote(dbPath)), clean(shellQuote(runID)))
	if p.err != nil {
		return
	}
	if code := showCommand.run(e, &global{db: dbPath}, showCommand, []string{runID}); code != ExitOK && p.err == nil {
		p.err = fmt.Errorf("agentrt show %s exited %d", runID, code)
	}
}

// demoProgress says on stderr, when it is a terminal, what the demo is
// doing before work that prints nothing until it is done.
func (e *env) demoProgress(what string) {
	if e.progress != nil && e.progress(e.stderr) {
		e.note("demo: %s...", what)
	}
}

// demoEngine is the engine every part of the demo runs: its policy and
// tools on the workspace, the demo's clock and ids, and owner's lease.
// With a Disclosure wired in, its rules also judge each provider request,
// which is sent with any secret in it redacted (docs/disclosure.md).
func (e *env) demoEngine(st agentrt.Store, model *agentrt.ModelConfig, ws, owner string) agentrt.EngineConfig {
	eng := agentrt.EngineConfig{Store: st, Model: model, Policy: demoPolicy{}, Tools: demoTools(ws), Now: e.demo.now, NewID: e.demo.newID, LeaseOwner: owner,
		Disclosure: e.opts.Disclosure}
	if eng.Disclosure != nil {
		eng.Egress = &agentrt.EgressRules{Secrets: agentrt.EgressSecretsRedact}
	}
	return eng
}

// demoWorker runs an agentrt.Worker on the demo's database until the run
// ends or pauses again, and returns the run as it is then.
func demoWorker(ctx context.Context, st *sqlite.Store, agent agentrt.Agent, model *agentrt.ModelConfig, ws string, e *env, runID string) (agentrt.Run, error) {
	settled := make(chan struct{}, 1)
	eng := e.demoEngine(st, model, ws, "agentrt-demo-worker")
	eng.Observer = func(ev agentrt.Event) {
		if ev.RunID == runID && (ev.Type == agentrt.EventRunFinished || ev.Type == agentrt.EventApprovalRequest) {
			select {
			case settled <- struct{}{}:
			default:
			}
		}
	}
	w, err := agentrt.NewWorker(agentrt.WorkerConfig{
		EngineConfig: eng,
		Agent:        agent,
		Concurrency:  1,
	})
	if err != nil {
		return agentrt.Run{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	select {
	case <-settled:
	case <-time.After(time.Minute):
	}
	cancel()
	if err := <-done; err != nil {
		return agentrt.Run{}, err
	}
	return st.GetRun(ctx, runID)
}
