package cel_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// examplePolicy copies examples/policy/policy.yaml (with extra first
// rules, if any) into an owner-only file and loads it.
func examplePolicy(t testing.TB, dir, prefix string) (*cel.Policy, string) {
	t.Helper()
	src, err := os.ReadFile("../../examples/policy/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if prefix != "" {
		text = strings.Replace(text, "\nrules:\n", "\nrules:\n"+prefix, 1)
	}
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o600)
	p, err := cel.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p, path
}

type countedTool struct {
	agentrt.ToolSpec
	calls atomic.Int64
}

func (c *countedTool) Spec() agentrt.ToolSpec { return c.ToolSpec }
func (c *countedTool) Call(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	c.calls.Add(1)
	return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
}

func exampleTools() (read, pay *countedTool) {
	read = &countedTool{ToolSpec: agentrt.ToolSpec{Name: "fs.read_file", Description: "read a file", SideEffect: agentrt.ReadOnly, Timeout: time.Second,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}}
	pay = &countedTool{ToolSpec: agentrt.ToolSpec{Name: "payments.pay", Description: "pay an invoice", SideEffect: agentrt.RemoteMutation, Timeout: time.Second,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"amount_cents":{"type":"integer"},"payee":{"type":"string"}},"required":["amount_cents","payee"]}`)}}
	return read, pay
}

// The example run: a read inside the project, a read outside it, a large
// payment, then done.
var examplePlan = []agentrt.Decision{
	scripted.ToolCall("fs.read_file", `{"path":"/project/README.md"}`, "read"),
	scripted.ToolCall("fs.read_file", `{"path":"/etc/shadow"}`, "read"),
	scripted.ToolCall("payments.pay", `{"payee":"ACME Ltd","amount_cents":250005}`, "pay"),
	scripted.Complete(`{"paid":true}`),
}

// recordExampleRun runs examplePlan under p in a new SQLite file, approves
// the payment and resumes; it returns the store's path.
func recordExampleRun(t testing.TB, dir string, p agentrt.Policy) (string, agentrt.Approval) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	read, pay := exampleTools()
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: p, Tools: []agentrt.Tool{read, pay}}, Agent: &scripted.Agent{Decisions: examplePlan}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.StartWithID(ctx, "run-1", "pay the invoice", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s %s, %v", run.Status, run.ReasonDetail, err)
	}
	apps, err := st.ListApprovals(ctx, "run-1")
	if err != nil || len(apps) != 1 {
		t.Fatalf("approvals %d, %v", len(apps), err)
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "run-1", apps[0].ID, apps[0].Hash, "ops", "ok"); err != nil {
		t.Fatal(err)
	}
	run, err = d.Resume(ctx, "run-1")
	if err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("Resume = %s %s, %v", run.Status, run.ReasonDetail, err)
	}
	if read.calls.Load() != 1 || pay.calls.Load() != 1 {
		t.Fatalf("read ran %d times, pay %d; want 1 and 1", read.calls.Load(), pay.calls.Load())
	}
	return path, apps[0]
}

// The same requests are decided alike by the loop, on resume, through the
// gate and by a re-check: the loop allows the project read, denies the
// other and pauses the payment with the amount shown; the resume's
// re-evaluation asks for the very approval that was granted (else it would
// pause again); a gate decides each request the same with the same
// approval fields; and Recheck finds every recorded decision the same,
// naming this file's id. A rule pinned to the tool's spec hash agrees with
// the hash the runtime recorded, and a wrong pin is caught.
func TestPolicy_LoopResumeGateAndRecheckDecideAlike(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p, _ := examplePolicy(t, dir, "")
	path, approval := recordExampleRun(t, dir, p)
	if !strings.Contains(string(approval.Presentation), `"amount":"2500.05"`) || approval.Kind != "payment" {
		t.Fatalf("approval kind %q presentation %s", approval.Kind, approval.Presentation)
	}
	if !approval.ExpiresAt.Equal(approval.CreatedAt.Add(4 * time.Hour)) {
		t.Fatalf("approval expires %s after creation, want the rule's 4h", approval.ExpiresAt.Sub(approval.CreatedAt))
	}
	st, err := sqlite.OpenExisting(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	steps, err := st.ListSteps(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []agentrt.PolicyOutcome{agentrt.Allow, agentrt.Deny, agentrt.RequireApproval}
	for i, o := range want {
		if steps[i].Policy == nil || steps[i].Policy.Outcome != o || steps[i].PolicyID != p.PolicyID() {
			t.Fatalf("step %d recorded %+v by %q, want %s by %s", i, steps[i].Policy, steps[i].PolicyID, o, p.PolicyID())
		}
	}

	// The gate, on another run in the same file.
	read, pay := exampleTools()
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: p, Tools: []agentrt.Tool{read, pay}}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := gate.Begin(ctx, "run-gate", "pay the invoice", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	verdicts := []agentrt.VerdictOutcome{agentrt.VerdictAllowed, agentrt.VerdictDenied, agentrt.VerdictPending}
	for i, wantV := range verdicts {
		step, err := sess.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, err := step.Propose(ctx, examplePlan[i])
		if err != nil || v.Outcome != wantV {
			t.Fatalf("gate step %d: %s, %v; want %s", i, v.Outcome, err, wantV)
		}
		switch v.Outcome {
		case agentrt.VerdictAllowed:
			if _, err := step.Execute(ctx); err != nil {
				t.Fatal(err)
			}
		case agentrt.VerdictPending:
			a := v.Approval
			if a.Kind != approval.Kind || string(a.Presentation) != string(approval.Presentation) || string(a.Capability) != string(approval.Capability) ||
				!a.ExpiresAt.Equal(a.CreatedAt.Add(4*time.Hour)) {
				t.Fatalf("the gate asks for %s %s %s, the loop asked for %s %s %s", a.Kind, a.Presentation, a.Capability, approval.Kind, approval.Presentation, approval.Capability)
			}
		}
	}

	// Recheck: the same file decides every recorded decision alike; a file
	// pinned to the recorded spec hash too, and one pinned to another hash
	// does not.
	rep, err := agentrt.Recheck(ctx, st, "run-1", p, agentrt.RecheckOptions{})
	if err != nil || !rep.Same() || !rep.Complete() || len(rep.Evaluations) != 3 {
		t.Fatalf("Recheck = %+v, %v", rep, err)
	}
	pin := func(hash string) *cel.Policy {
		pp, _ := examplePolicy(t, t.TempDir(), "  - name: pinned\n    match: {tools: [fs.read_file]}\n    when: tool.spec_hash != \""+hash+"\"\n    outcome: abort\n")
		return pp
	}
	rep, err = agentrt.Recheck(ctx, st, "run-1", pin(steps[0].SpecHash), agentrt.RecheckOptions{})
	if err != nil || !rep.Same() {
		t.Fatalf("Recheck pinned to the recorded spec hash %s = %+v, %v", steps[0].SpecHash, rep, err)
	}
	rep, err = agentrt.Recheck(ctx, st, "run-1", pin(strings.Repeat("0", 64)), agentrt.RecheckOptions{})
	if err != nil || rep.Same() || len(rep.Differences()) != 2 {
		t.Fatalf("Recheck pinned to a wrong hash = %+v, %v; want the two reads different", rep, err)
	}
}

// A request on which an expression fails ends the run FAILED as a policy
// error (internal_error), and the tool never runs.
func TestPolicy_EvaluationErrorEndsTheRunAndNothingRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p, _ := examplePolicy(t, dir, "  - name: strict-payee\n    match: {tools: [payments.pay]}\n    when: args.payee.size() > 100\n    outcome: deny\n")
	st, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	read, pay := exampleTools()
	pay.InputSchema = json.RawMessage(`{"type":"object"}`)
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Policy: p,
			Tools:  []agentrt.Tool{read, pay},
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{
			scripted.ToolCall("payments.pay", `{"amount_cents":5}`, "pay with no payee"),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.StartWithID(ctx, "run-1", "g", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != agentrt.RunFailed || run.Reason != agentrt.ReasonInternalError || !strings.Contains(run.ReasonDetail, "strict-payee") {
		t.Fatalf("run %s %s %q, want FAILED internal_error naming the rule", run.Status, run.Reason, run.ReasonDetail)
	}
	if pay.calls.Load() != 0 {
		t.Fatalf("pay ran %d times after a policy error", pay.calls.Load())
	}
}
