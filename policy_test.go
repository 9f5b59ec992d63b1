package agentrt_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// An outcome the runtime does not know fails the run as internal_error, in
// the loop and on resume alike; the tool never runs and no approval is
// written for it.
func TestPolicy_UnknownOutcomeFailsLoopAndResume(t *testing.T) {
	ctx := context.Background()
	for _, out := range []agentrt.PolicyOutcome{"", "ALLOW", "permit"} {
		t.Run("loop "+string(out), func(t *testing.T) {
			e := newEnv(t)
			send := newTool("send", agentrt.RemoteMutation, pathSchema, nil)
			agent := script(call("send", `{"path":"/a"}`), complete(`{}`))
			d := e.driver(agent, fixed(agentrt.PolicyDecision{Outcome: out, Reason: "?"}), send)
			run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			requireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
			if !strings.Contains(run.ReasonDetail, "unknown policy outcome") {
				t.Fatalf("detail = %q", run.ReasonDetail)
			}
			if send.n() != 0 || agent.n.Load() != 1 {
				t.Fatalf("send ran %d times, agent asked %d times", send.n(), agent.n.Load())
			}
			if n := countRows(t, e.store, "SELECT * FROM approvals"); n != 0 {
				t.Fatalf("%d approvals written", n)
			}
			st := mustSteps(t, e.store, "run-1")[0]
			if st.Status != agentrt.StepFailed || st.Policy != nil {
				t.Fatalf("step = %+v policy %+v", st, st.Policy)
			}
			requireEvents(t, e.store, "run-1", evStart, []E{stepStarted, stepDecided, stepFailed, runFinished})
		})
	}
	t.Run("resume", func(t *testing.T) {
		e := newEnv(t)
		send := newTool("send", agentrt.RemoteMutation, pathSchema, nil)
		var resumed atomic.Bool
		policy := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, view agentrt.RunView) (agentrt.PolicyDecision, error) {
			if resumed.Load() {
				return agentrt.PolicyDecision{Outcome: "maybe"}, nil
			}
			return agentrt.DefaultPolicy().Evaluate(ctx, req, view)
		})
		agent := script(call("send", `{"path":"/a"}`), complete(`{}`))
		d := e.driver(agent, policy, send)
		run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
		}
		a := pendingApproval(t, e.store, "run-1")
		if err := e.operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
			t.Fatalf("Approve: %v", err)
		}
		resumed.Store(true)
		run, err = d.Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		requireEnded(t, run, agentrt.RunFailed, agentrt.ReasonInternalError)
		if !strings.Contains(run.ReasonDetail, "unknown policy outcome") {
			t.Fatalf("detail = %q", run.ReasonDetail)
		}
		if send.n() != 0 || agent.n.Load() != 1 {
			t.Fatalf("send ran %d times, agent asked %d times", send.n(), agent.n.Load())
		}
		as := mustApprovals(t, e.store, "run-1")
		if len(as) != 1 || as[0].Status != agentrt.ApprovalApproved {
			t.Fatalf("approvals = %+v", as)
		}
		if st := mustSteps(t, e.store, "run-1")[0]; st.Status != agentrt.StepFailed {
			t.Fatalf("step is %s", st.Status)
		}
		requireEvents(t, e.store, "run-1", evStart, evPause, []E{apprDecided, stepFailed, runFinished})
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
	send := newTool("send", agentrt.RemoteMutation, schema, nil)
	const written = "{\n  \"b\": \"<x>\",\n  \"a\": 1\n}"
	policy := recording(agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		// Bind the approval to the bytes as read, so different bytes on
		// resume would ask again.
		return agentrt.NeedApproval("send", "check", json.RawMessage(req.Args), map[string]string{"args": string(req.Args), "schema": string(req.Spec.InputSchema)})
	}))
	d1 := e.driver(script(call("send", written)), policy, send)
	run, err := d1.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
	}
	a := pendingApproval(t, e.store, "run-1")
	if err := agentrt.ApproveShown(ctx, e.store, nil, "run-1", a.ID, a.Hash, "op", ""); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	other := reopen(t, e.store)
	send2 := newTool("send", agentrt.RemoteMutation, schema, nil)
	cfg := e.config(script(call("send", written), complete(`{}`)), policy, send2)
	cfg.Store = other
	run, err = e.driverFor(cfg).Resume(ctx, "run-1")
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	requireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)

	args, schemas := policy.seen()
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
	if send.n() != 0 || send2.n() != 1 {
		t.Fatalf("send ran %d times in the loop and %d on resume, want 0 and 1", send.n(), send2.n())
	}
	if as := mustApprovals(t, e.store, "run-1"); len(as) != 1 {
		t.Fatalf("%d approvals: the resume was handed other bytes and asked again", len(as))
	}
	requireEvents(t, e.store, "run-1", evStart, evPause, []E{apprDecided, runResumed, stepPolicy, toolStarted, toolFinished}, evComplete)
}
