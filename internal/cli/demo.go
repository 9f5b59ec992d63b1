package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/view"
)

var demoCommand = &command{
	name:    "demo",
	summary: "run an agent on a scratch workspace; a write waits for your approval",
	usage:   "[-auto-approve] [-agent model|scripted]",
	run:     runDemo,
}

// demoOptions are what tests fix about the demo so its output is stable.
type demoOptions struct {
	now     func() time.Time // the driver's clock; nil is the wall clock
	newID   func() string    // run, step and approval ids; nil is random
	tempDir string           // where the demo's directory is made; "" is os.TempDir
}

// demoOperator is who -auto-approve records as deciding.
const demoOperator = "demo-operator"

func runDemo(e *env, g *global, c *command, args []string) int {
	fl := e.flags(c, g)
	auto := fl.Bool("auto-approve", false, "play the operator too: approve, resume, and print the trail and verify's result")
	kind := fl.String("agent", agentModel, "model or scripted")
	pos, code, ok := e.parse(c, fl, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if *kind != agentModel && *kind != agentScripted {
		return e.usageError(c, fmt.Sprintf("-agent must be %s or %s, got %q", agentModel, agentScripted, clip(*kind, 40)))
	}
	// The demo writes only a database it creates: -db, never $AGENTRT_DB,
	// and never one that exists.
	dbPath := g.db
	if s, _, err := backend.Scheme(dbPath); dbPath != "" && (err != nil || s != backend.FileScheme) {
		return e.fail("refusing %s: the demo runs on a new SQLite file it creates, so pass -db PATH (or no -db)", backend.Redact(dbPath))
	}
	if dbPath != "" {
		if _, err := os.Lstat(dbPath); !errors.Is(err, fs.ErrNotExist) {
			return e.fail("refusing %s: it exists, and the demo only creates a new database", dbPath)
		}
	}
	dir, err := os.MkdirTemp(e.demo.tempDir, "agentrt-demo-")
	if err != nil {
		return e.fail("making the demo's directory: %v", err)
	}
	ws := filepath.Join(dir, "workspace")
	if err := makeWorkspace(ws); err != nil {
		return e.fail("making the demo's workspace: %v", err)
	}
	if dbPath == "" {
		dbPath = filepath.Join(dir, "runs.db")
	}
	st, err := sqlite.Open(dbPath)
	if err != nil {
		fmt.Fprintln(e.stderr, "agentrt: "+openRefusal(dbPath, err))
		return ExitFailure
	}
	defer st.Close()
	agent, model, stop, err := demoAgent(*kind, 0)
	if err != nil {
		return e.fail("starting the demo's model: %v", err)
	}
	defer stop()
	drv, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: e.demoEngine(st, model, ws, "agentrt-demo"),
		Agent:        agent,
	})
	if err != nil {
		return e.fail("setting up the demo's driver: %v", err)
	}

	p := &printer{w: e.stdout}
	p.printf("agentrt demo: an agent works on a scratch workspace. Reads are allowed; a write waits for an operator.\n")
	p.printf("  workspace  %s (notes.txt, todo.txt)\n", clean(ws))
	p.printf("  database   %s\n", clean(dbPath))
	if *kind == agentModel {
		p.printf("  agent      render.Agent -> providers/openai -> a scripted Chat Completions server on 127.0.0.1 (no network, no key)\n")
	} else {
		p.printf("  agent      a scripted agent making the model's decisions (no model)\n")
	}
	if model != nil {
		// A budget the run falls under: each model call reserves against
		// it before it is sent and settles after.
		if _, err := (agentrt.Operator{Store: st, Now: e.demo.now}).AddBudget(background(), agentrt.NewBudget{Name: demoBudget,
			Scope: demoScope, Window: agentrt.WindowDay, MaxCost: demoBudgetCost, By: demoOperator}); err != nil {
			return e.fail("adding the demo's budget: %v", err)
		}
		p.printf("  budget     %s: runs labelled %s may spend %s a day; each model call reserves before it is sent\n", demoBudget, demoScope, demoBudgetCost.Dollars())
	}
	p.printf("  goal       %s\n\n", demoGoal)

	ctx := background()
	e.demoProgress("starting the run: the agent lists and reads the workspace, then asks to write")
	run, err := drv.Start(ctx, demoGoal, demoLimits())
	if err != nil {
		return e.fail("running the demo: %v", err)
	}
	if run.Status != agentrt.RunWaiting {
		p.printf("run %s ended before its write: %s (%s: %s)\n\n", clip(run.ID, 64), run.Status, run.Reason, capped(run.ReasonDetail, textClipBytes))
		e.demoSteps(p, dbPath, run.ID)
		return e.done(p, ExitFailure)
	}
	a, err := view.PendingApproval(ctx, st, run.ID, "")
	if err != nil {
		return e.fail("reading the demo's approval: %v", err)
	}
	p.printf("run %s is %s after %d steps: it listed and read the workspace, then asked to write, and the policy sent the write to an operator.\n\n",
		clip(run.ID, 64), run.Status, run.StepCount)
	writeApproval(p, a, blockOptions{})

	db := clean(shellQuote(dbPath))
	rid := clean(shellQuote(run.ID))
	agentFlag := ""
	if *kind != agentModel {
		agentFlag = " -agent " + *kind
	}
	if !*auto {
		p.printf("\nTo continue, approve the write (agentrt prints it again and asks you to type yes), then resume the run:\n\n")
		p.printf("  %s -db %s approve %s\n", e.prog, db, rid)
		p.printf("  %s -db %s resume -workspace %s%s %s\n\n", e.prog, db, clean(shellQuote(ws)), agentFlag, rid)
		p.printf("Or refuse it, which cancels the run:\n\n  %s -db %s reject %s\n", e.prog, db, rid)
		return e.done(p, ExitOK)
	}

	// Play the operator: decide on exactly what was printed above.
	shown, err := agentrt.ApprovalHashWith(a.Kind, a.Capability, a.Presentation, a.Request, a.Requirement, a.PolicyVersion)
	if err != nil || shown != a.Hash {
		return e.fail("approval %s does not match its own hash; nothing was decided", a.ID)
	}
	op := agentrt.Operator{Store: st, Now: e.demo.now}
	if err := op.ApproveShown(ctx, run.ID, a.ID, shown, demoOperator, "approved by agentrt demo -auto-approve"); err != nil {
		return e.decideError(run.ID, a.ID, err)
	}
	p.printf("\napproved: approval %s by %s, bound to hash %s, the hash of the block above\n", clip(a.ID, 64), demoOperator, shown)
	// Nobody calls Resume: a worker polling the database claims the
	// approved run and carries it on, as a pool of workers would.
	e.demoProgress("approved; waiting for a worker to claim the run and finish it")
	run, err = demoWorker(ctx, st, agent, model, ws, e, run.ID)
	if err != nil {
		return e.fail("continuing the demo's run: %v", err)
	}
	exit := ExitOK
	if run.Status != agentrt.RunCompleted {
		exit = ExitFailure
	}
	p.printf("resumed by a worker: run %s is %s (%s) after %d steps; no one called Resume\n", clip(run.ID, 64), run.Status, run.Reason, run.StepCount)
	if run.ModelCalls > 0 {
		p.printf("model: %d call(s), %d tokens in, %d out, estimated %s at the demo's invented prices\n",
			run.ModelCalls, run.Usage.InputTokens, run.Usage.OutputTokens, run.EstimatedCost.Dollars())
	}
	if model != nil {
		p.printf("budget %s holds what the calls settled at (%s -db %s budgets show %s)\n", demoBudget, e.prog, db, demoBudget)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "summary.md")); err == nil {
		p.printf("summary.md in the workspace holds %d bytes, the content approved above\n", len(b))
	}
	p.printf("\n")
	e.demoSteps(p, dbPath, run.ID)
	p.printf("\nverify (%s -db %s verify):\n", e.prog, db)
	e.demoProgress("verifying the database's hash chain")
	rep, err := verifyChain(e, st, 0, 0, nil)
	if err != nil {
		return e.fail("verifying the demo's database: %v", err)
	}
	writeVerify(p, rep)
	if !rep.OK {
		exit = ExitFailure
	}
	p.printf("\nKeep that head where the database's writers cannot reach it; later,\n")
	p.printf("  %s -db %s verify -head %d:%s\n", e.prog, db, rep.Head.Seq, rep.Head.Hash)
	p.printf("fails unless the chain still reaches it. Look around with:\n")
	for _, cmd := range []string{"runs", "show " + rid, "events " + rid} {
		p.printf("  %s -db %s %s\n", e.prog, db, cmd)
	}
	return e.done(p, exit)
}

// demoSteps prints the run as agentrt show does, under the command that
// prints it again: the step table a person reads, where the raw events
// were a wall of JSON (agentrt events still prints those).
func (e *env) demoSteps(p *printer, dbPath, runID string) {
	p.printf("steps (%s -db %s show %s):\n", e.prog, clean(shellQuote(dbPath)), clean(shellQuote(runID)))
	if p.err != nil {
		return
	}
	if code := runShow(e, &global{db: dbPath}, showCommand, []string{runID}); code != ExitOK && p.err == nil {
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
