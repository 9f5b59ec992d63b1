package enginetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// stateWatch is a store that reads the run and its last step after every
// commit, so a test can see which commit changed what.
type stateWatch struct {
	agentrt.Store
	t      testing.TB
	runID  string
	states []watchState
}

type watchState struct {
	run      agentrt.RunStatus
	lastIdx  int
	lastStep agentrt.StepStatus
	events   []kit.E
}

func (w *stateWatch) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	evs, err := w.Store.Update(ctx, fn)
	if err != nil {
		return evs, err
	}
	st := watchState{lastIdx: -1}
	if r, err := w.Store.GetRun(ctx, w.runID); err == nil {
		st.run = r.Status
	}
	if steps, err := w.Store.ListSteps(ctx, w.runID); err == nil && len(steps) > 0 {
		st.lastIdx, st.lastStep = steps[len(steps)-1].Index, steps[len(steps)-1].Status
	}
	for _, e := range evs {
		st.events = append(st.events, e.Type)
	}
	w.states = append(w.states, st)
	return evs, nil
}

// A terminal tool's success, a tool's abort, a completion and a policy abort
// each end their step and the run in one commit: no commit shows the step
// ended with the run still going, and the tool's outcome is in that commit.
func caseDriver_TerminalToolCommitsWithTheRun(t *testing.T, bk *Backend) {
	ctx := context.Background()
	cases := []struct {
		name       string
		tool       func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error)
		terminal   bool
		decision   agentrt.Decision
		policy     agentrt.PolicyOutcome
		status     agentrt.RunStatus
		reason     agentrt.TerminalReason
		lastStep   agentrt.StepStatus
		ending     []kit.E // the events of the commit that ends the run
		runs       int
		wantResult string
	}{
		{name: "terminal tool", terminal: true,
			tool: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
				return agentrt.ToolResult{Content: json.RawMessage(`{"done":true}`), Summary: "done"}, nil
			},
			decision: kit.Call("finish", `{"path":"/a"}`), policy: agentrt.Allow,
			status: agentrt.RunCompleted, reason: agentrt.ReasonGoalCompleted, lastStep: agentrt.StepDone,
			ending: []kit.E{kit.ToolFinished, kit.RunFinished}, runs: 1, wantResult: `{"done":true}`},
		{name: "tool abort",
			tool: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
				return agentrt.ToolResult{}, &agentrt.AbortRunError{Detail: "disk on fire"}
			},
			decision: kit.Call("finish", `{"path":"/a"}`), policy: agentrt.Allow,
			status: agentrt.RunFailed, reason: agentrt.ReasonToolAbort, lastStep: agentrt.StepFailed,
			ending: []kit.E{kit.ToolFinished, kit.StepFailed, kit.RunFinished}, runs: 1},
		{name: "complete", decision: kit.Complete(`{"r":1}`), policy: agentrt.Allow,
			status: agentrt.RunCompleted, reason: agentrt.ReasonGoalCompleted, lastStep: agentrt.StepDone,
			ending: []kit.E{kit.RunFinished}, wantResult: `{"r":1}`},
		{name: "policy abort", decision: kit.Call("finish", `{"path":"/a"}`), policy: agentrt.Abort,
			status: agentrt.RunFailed, reason: agentrt.ReasonPolicyAbort, lastStep: agentrt.StepFailed,
			ending: []kit.E{kit.StepPolicy, kit.StepFailed, kit.RunFinished}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			fin := kit.NewTool("finish", agentrt.ReadOnly, kit.PathSchema, c.tool)
			fin.Terminal = c.terminal
			read := kit.NewTool("read", agentrt.ReadOnly, kit.PathSchema, nil)
			w := &stateWatch{Store: e.Store, t: t, runID: "run-1"}
			cfg := e.Config(kit.Script(kit.Call("read", `{"path":"/r"}`), c.decision), kit.Fixed(agentrt.PolicyDecision{Outcome: c.policy, Reason: "r"}), fin, read)
			cfg.Policy = agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
				if req.Spec.Name == "read" {
					return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
				}
				return agentrt.PolicyDecision{Outcome: c.policy, Reason: "r"}, nil
			})
			cfg.Store = w
			d := e.DriverFor(cfg)
			run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			kit.RequireEnded(t, run, c.status, c.reason)
			if c.wantResult != "" && string(run.Result) != c.wantResult {
				t.Fatalf("result = %s, want %s", run.Result, c.wantResult)
			}
			if fin.N() != c.runs {
				t.Fatalf("finish ran %d times, want %d", fin.N(), c.runs)
			}
			end := -1
			for i, s := range w.states {
				if s.run.Terminal() {
					end = i
					break
				}
			}
			if end < 1 {
				t.Fatalf("no commit ended the run after another: %+v", w.states)
			}
			before, at := w.states[end-1], w.states[end]
			if before.run != agentrt.RunRunning || before.lastIdx != 1 || !before.lastStep.InFlight() {
				t.Fatalf("the commit before the end shows run %s, step %d %s: the step ended apart from the run", before.run, before.lastIdx, before.lastStep)
			}
			if at.lastIdx != 1 || at.lastStep != c.lastStep {
				t.Fatalf("the ending commit left step %d %s, want step 1 %s", at.lastIdx, at.lastStep, c.lastStep)
			}
			if !reflect.DeepEqual(at.events, c.ending) {
				t.Fatalf("the ending commit wrote %v, want %v", at.events, c.ending)
			}
			if end != len(w.states)-1 {
				t.Fatalf("commits after the end: %+v", w.states[end+1:])
			}
		})
	}
}
