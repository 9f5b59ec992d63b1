package enginetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// startAsync runs d.StartWithID in a goroutine and returns a channel with
// its outcome.
func startAsync(d *agentrt.Driver) <-chan startResult {
	out := make(chan startResult, 1)
	go func() {
		run, err := d.StartWithID(context.Background(), "run-1", "g", agentrt.DefaultLimits())
		out <- startResult{run, err}
	}()
	return out
}

type startResult struct {
	run agentrt.Run
	err error
}

// awaitCancelled waits for the start that done reports and requires the
// run, as Start returned it and as stored, to have been cancelled by an
// operator; it returns both.
func awaitCancelled(t *testing.T, e *env, done <-chan startResult) (returned, stored agentrt.Run) {
	t.Helper()
	res := <-done
	if res.err != nil {
		t.Fatalf("Start: %v", res.err)
	}
	kit.RequireEnded(t, res.run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	stored = kit.MustRun(t, e.Store, "run-1")
	kit.RequireEnded(t, stored, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	return res.run, stored
}

// An operator cancels a run while its loop is busy, from another process:
// the loop's next write fails, nothing it was about to do happens, and it
// returns the cancelled run. The cancel is not overwritten.
func caseCancel_LiveLoopStopsAtItsNextWrite(t *testing.T, bk *Backend) {
	ctx := context.Background()
	cases := []struct {
		name    string
		inAgent bool
		events  []kit.E
	}{
		{"while the agent decides", true, []kit.E{kit.StepStarted, kit.StepFailed, kit.RunFinished}},
		{"while the policy decides", false, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepFailed, kit.RunFinished}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			busy := make(chan struct{})
			proceed := make(chan struct{})
			wait := func() {
				busy <- struct{}{}
				<-proceed
			}
			write := kit.NewTool("write", agentrt.LocalMutation, kit.PathSchema, nil)
			agent := &kit.CountingAgent{Inner: agentrt.AgentFunc(func(context.Context, agentrt.StepInput) (agentrt.Decision, error) {
				if c.inAgent {
					wait()
				}
				return kit.Call("write", `{"path":"/a"}`), nil
			})}
			policy := kit.Recording(agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
				if !c.inAgent {
					wait()
				}
				return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
			}))
			d := e.Driver(agent, policy, write)
			done := startAsync(d)
			<-busy
			other := agentrt.Operator{Store: e.db.open(t), Now: e.Clock.Now}
			cancelled, err := other.Cancel(ctx, "run-1", "alice", "stop it")
			if err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			kit.RequireEnded(t, cancelled, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
			close(proceed)
			returned, stored := awaitCancelled(t, e, done)
			if stored.ReasonDetail != "stop it" || returned.ReasonDetail != "stop it" {
				t.Fatalf("detail = %q, returned %q", stored.ReasonDetail, returned.ReasonDetail)
			}
			if write.N() != 0 || agent.N.Load() != 1 {
				t.Fatalf("write ran %d times, agent asked %d times", write.N(), agent.N.Load())
			}
			if c.inAgent && policy.N() != 0 {
				t.Fatal("the policy was asked after the cancel")
			}
			steps := kit.MustSteps(t, e.Store, "run-1")
			if len(steps) != 1 || steps[0].Status != agentrt.StepFailed || steps[0].Policy != nil {
				t.Fatalf("steps = %+v", steps)
			}
			kit.RequireObs(t, steps[0], agentrt.ObsInterrupted)
			if c := kit.ObsContent(t, steps[0]); c["by"] != "alice" || c["note"] != "stop it" {
				t.Fatalf("step observation = %v; the cancel's record was overwritten", c)
			}
			if c.inAgent && steps[0].Decision != nil {
				t.Fatalf("a decision was recorded on a cancelled run: %+v", steps[0].Decision)
			}
			fin := kit.EventsOf(t, e.Store, "run-1", kit.RunFinished)
			if len(fin) != 1 || kit.Payload(t, fin[0])["by"] != "alice" {
				t.Fatalf("run.finished = %v", fin)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, c.events)
		})
	}
}

// A tool still running when an operator cancels has its outcome appended
// after the run ended, as a late step.tool_finished carrying the whole
// observation; the cancelled run and the cancel's record of the step stand,
// even when the tool would have completed or aborted the run.
func caseCancel_ToolOutcomeIsAppendedLate(t *testing.T, bk *Backend) {
	ctx := context.Background()
	cases := []struct {
		name     string
		terminal bool
		result   func() (agentrt.ToolResult, error)
		kind     agentrt.ObservationKind
	}{
		{"ordinary tool", false, func() (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"sent":1}`), Summary: "sent"}, nil
		}, agentrt.ObsToolResult},
		{"terminal tool", true, func() (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"done":1}`)}, nil
		}, agentrt.ObsToolResult},
		{"aborting tool", false, func() (agentrt.ToolResult, error) {
			return agentrt.ToolResult{}, &agentrt.AbortRunError{Detail: "gave up"}
		}, agentrt.ObsToolError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, bk)
			send, running, release := heldSend(c.result)
			send.Terminal = c.terminal
			agent := kit.Script(kit.Call("send", `{"path":"/a"}`), kit.Complete(`{}`))
			d := e.Driver(agent, agentrt.DefaultPolicy(), send)
			done := startAsync(d)
			<-running
			if _, err := e.Operator().Cancel(ctx, "run-1", "alice", "too slow"); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			close(release)
			_, stored := awaitCancelled(t, e, done)
			if stored.Result != nil {
				t.Fatalf("the late outcome became the run's result: %s", stored.Result)
			}
			if send.N() != 1 || agent.N.Load() != 1 {
				t.Fatalf("send ran %d times, agent asked %d", send.N(), agent.N.Load())
			}
			st := kit.MustSteps(t, e.Store, "run-1")[0]
			if st.Status != agentrt.StepFailed {
				t.Fatalf("step is %s", st.Status)
			}
			kit.RequireObs(t, st, agentrt.ObsInterrupted)
			late := kit.EventsOf(t, e.Store, "run-1", kit.ToolFinished)
			if len(late) != 1 || late[0].StepID != st.ID {
				t.Fatalf("tool_finished events = %v", late)
			}
			var p struct {
				Tool        string              `json:"tool"`
				Late        bool                `json:"late"`
				Observation agentrt.Observation `json:"observation"`
			}
			if err := json.Unmarshal(late[0].Payload, &p); err != nil {
				t.Fatal(err)
			}
			want, _ := c.result()
			if !p.Late || p.Tool != "send" || p.Observation.Kind != c.kind {
				t.Fatalf("late event = %s", late[0].Payload)
			}
			if want.Content != nil && !reflect.DeepEqual([]byte(p.Observation.Content), []byte(want.Content)) {
				t.Fatalf("late observation content = %s, want %s", p.Observation.Content, want.Content)
			}
			kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepPolicy, kit.ToolStarted, kit.StepFailed, kit.RunFinished, kit.ToolFinished})
		})
	}
}

// An operator cancels a run waiting on an approval: in the cancel's
// transaction the pending approval becomes cancelled, recorded with who
// cancelled and why, so nothing is left pending. Deciding it afterwards,
// either way, is ErrNotPending and writes nothing.
func caseCancel_LeavesNoApprovalPending(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
	e.Clock.Advance(time.Minute)
	at := e.Clock.Now()
	run, err := e.Operator().Cancel(ctx, "run-1", "alice", "not today")
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	got, err := e.Store.GetApproval(ctx, "run-1", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != agentrt.ApprovalCancelled || got.DecidedBy != "alice" || got.Note != "not today" || !got.DecidedAt.Equal(at) || got.Hash != a.Hash {
		t.Fatalf("approval after the cancel = %+v", got)
	}
	if !got.Status.Decided() || agentrt.ApprovalPending.Decided() {
		t.Fatalf("Decided: cancelled %v, pending %v", got.Status.Decided(), agentrt.ApprovalPending.Decided())
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.StepFailed, kit.RunFinished})
	dec := kit.EventsOf(t, e.Store, "run-1", kit.ApprDecided)
	if p := kit.Payload(t, dec[0]); p["approval_id"] != a.ID || p["status"] != string(agentrt.ApprovalCancelled) || p["by"] != "alice" {
		t.Fatalf("approval.decided = %s", dec[0].Payload)
	}

	e.requireUndecided(t, a, "bob", agentrt.ErrNotPending, "after the cancel")
}

// heldSend is a local "send" tool that, once called, closes running and
// holds the call until release is closed, then returns result(): a tool
// still running while the test acts on its run.
func heldSend(result func() (agentrt.ToolResult, error)) (send *kit.Counted, running, release chan struct{}) {
	running, release = make(chan struct{}), make(chan struct{})
	send = kit.NewTool("send", agentrt.LocalMutation, kit.PathSchema, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		close(running)
		<-release
		return result()
	})
	return send, running, release
}
