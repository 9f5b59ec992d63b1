package agentrt_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// requireUnknownOutcomeFailed requires run to have failed as internal_error
// over an unknown policy outcome, with send never run and agent asked once.
func requireUnknownOutcomeFailed(t *testing.T, run agentrt.Run, send *kit.Counted, agent *kit.CountingAgent) {
	t.Helper()
	kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
	if !strings.Contains(run.ReasonDetail, "unknown policy outcome") {
		t.Fatalf("detail = %q", run.ReasonDetail)
	}
	if send.N() != 0 || agent.N.Load() != 1 {
		t.Fatalf("send ran %d times, agent asked %d times", send.N(), agent.N.Load())
	}
}

// An outcome the runtime does not know fails the run as internal_error, in
// the loop and on resume alike; the tool never runs and no approval is
// written for it.
func TestPolicy_UnknownOutcomeFailsLoopAndResume(t *testing.T) {
	ctx := context.Background()
	for _, out := range []agentrt.PolicyOutcome{"", "ALLOW", "permit"} {
		t.Run("loop "+string(out), func(t *testing.T) {
			e := newEnv(t)
			send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
			agent := kit.Script(kit.Call("send", `{"path":"/a"}`), kit.Complete(`{}`))
			d := e.Driver(agent, kit.Fixed(agentrt.PolicyDecision{Outcome: out, Reason: "?"}), send)
			run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			requireUnknownOutcomeFailed(t, run, send, agent)
			if n := countRows(t, e.store, "SELECT * FROM approvals"); n != 0 {
				t.Fatalf("%d approvals written", n)
			}
			st := kit.MustSteps(t, e.store, "run-1")[0]
			if st.Status != agentrt.StepFailed || st.Policy != nil {
				t.Fatalf("step = %+v policy %+v", st, st.Policy)
			}
			kit.RequireEvents(t, e.store, "run-1", kit.EvStart, []kit.E{kit.StepStarted, kit.StepDecided, kit.StepFailed, kit.RunFinished})
		})
	}
	t.Run("resume", func(t *testing.T) {
		e := newEnv(t)
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		var resumed atomic.Bool
		policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
			if resumed.Load() {
				return agentrt.PolicyDecision{Outcome: "maybe"}, nil
			}
			return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
		})
		agent := kit.Script(kit.Call("send", `{"path":"/a"}`), kit.Complete(`{}`))
		d := e.Driver(agent, policy, send)
		run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
		}
		a := kit.PendingApproval(t, e.store, "run-1")
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
			t.Fatalf("Approve: %v", err)
		}
		resumed.Store(true)
		run, err = d.Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		requireUnknownOutcomeFailed(t, run, send, agent)
		as := kit.MustApprovals(t, e.store, "run-1")
		if len(as) != 1 || as[0].Status != agentrt.ApprovalApproved {
			t.Fatalf("approvals = %+v", as)
		}
		if st := kit.MustSteps(t, e.store, "run-1")[0]; st.Status != agentrt.StepFailed {
			t.Fatalf("step is %s", st.Status)
		}
		kit.RequireEvents(t, e.store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.StepFailed, kit.RunFinished})
	})
}

// A policy that reads bytes is handed the same arguments and schema in the
// loop and on resume, though the agent wrote its arguments pretty, unordered
// and with characters an HTML-escaping encoder would rewrite, and the resume
// reads them back from the stored approval in another process.
func TestPolicy_LoopAndResumeHandedTheSameBytes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const schema = `{
		"type": "object",
		"description": "sends <b>reports</b> & more",
		"properties": { "b": { "type": "string" }, "a": { "type": "number" } },
		"required": ["a", "b"]
	}`
	send := kit.NewTool("send", agentrt.RemoteMutation, schema, nil)
	const written = "{\n  \"b\": \"<x>\",\n  \"a\": 1\n}"
	policy := kit.Recording(agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		// Bind the approval to the bytes as read, so different bytes on
		// resume would ask again.
		return agentrt.NeedApproval("send", "check", json.RawMessage(req.Args), map[string]string{"args": string(req.Args), "schema": string(req.Spec.InputSchema)})
	}))
	d1 := e.Driver(kit.Script(kit.Call("send", written)), policy, send)
	run, err := d1.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
	}
	a := kit.PendingApproval(t, e.store, "run-1")
	if err := agentrt.ApproveShown(ctx, e.store, nil, "run-1", a.ID, a.Hash, "op", ""); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	other := reopen(t, e.store)
	send2 := kit.NewTool("send", agentrt.RemoteMutation, schema, nil)
	cfg := e.Config(kit.Script(kit.Call("send", written), kit.Complete(`{}`)), policy, send2)
	cfg.Store = other
	run, err = e.DriverFor(cfg).Resume(ctx, "run-1")
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)

	args, schemas := policy.Seen()
	wantSchema, err := agentrt.PolicyJSON([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 2 || args[0] != `{"a":1,"b":"<x>"}` || args[1] != args[0] {
		t.Fatalf("policy handed args %q, want {\"a\":1,\"b\":\"<x>\"} twice", args)
	}
	if len(schemas) != 2 || schemas[0] != string(wantSchema) || schemas[1] != schemas[0] {
		t.Fatalf("policy handed schemas %q, want %s twice", schemas, wantSchema)
	}
	if !strings.Contains(schemas[0], "<b>reports</b> & more") {
		t.Fatalf("schema handed HTML-escaped: %s", schemas[0])
	}
	if send.N() != 0 || send2.N() != 1 {
		t.Fatalf("send ran %d times in the loop and %d on resume, want 0 and 1", send.N(), send2.N())
	}
	if as := kit.MustApprovals(t, e.store, "run-1"); len(as) != 1 {
		t.Fatalf("%d approvals: the resume was handed other bytes and asked again", len(as))
	}
	kit.RequireEvents(t, e.store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
}
