package testkit_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit"
)

func policyTools() []agentrt.Tool {
	spec := func(name string, se agentrt.SideEffect, schema string) agentrt.Tool {
		return agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: name, Description: name, SideEffect: se, Timeout: time.Second,
			InputSchema: json.RawMessage(schema)}, Fn: nil}
	}
	return []agentrt.Tool{
		spec("read", agentrt.ReadOnly, `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		spec("rm", agentrt.Destructive, `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		spec("post", agentrt.RemoteMutation, `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
	}
}

// A table the policy agrees with reports nothing, and the runtime's
// validation decides Refused before the policy is asked.
func TestCheckPolicy_AgreeingTablePasses(t *testing.T) {
	var asked atomic.Int64
	p := agentrt.PolicyFunc(func(ctx context.Context, req agentrt.ToolRequest, v agentrt.RunView) (agentrt.PolicyDecision, error) {
		asked.Add(1)
		return agentrt.DefaultPolicy().Evaluate(ctx, req, v)
	})
	rec := &recTB{TB: t}
	testkit.CheckPolicy(rec, p, policyTools(), []testkit.PolicyCase{
		{Name: "read", Tool: "read", Args: `{"path":"/etc/hosts"}`, Want: agentrt.Allow},
		{Name: "rm", Tool: "rm", Args: `{"path":"/"}`, Want: agentrt.Deny, Reason: "destructive"},
		{Name: "post", Tool: "post", Args: `{ "url" : "https://x.example/a" }`, Want: agentrt.RequireApproval,
			Kind: "remote_mutation", Capability: `"url":"https://x.example/a"`, Presentation: `"tool":"post"`},
		{Name: "unknown tool", Tool: "shell", Args: `{}`, Want: testkit.Refused},
		{Name: "missing path", Tool: "read", Want: testkit.Refused},
		{Name: "extra key", Tool: "read", Args: `{"path":"a","mode":1}`, Want: testkit.Refused},
		{Name: "duplicate key", Tool: "read", Args: `{"path":"a","path":"b"}`, Want: testkit.Refused},
	})
	if len(rec.errs) != 0 {
		t.Fatalf("an agreeing table reported:\n%s", strings.Join(rec.errs, "\n"))
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("the policy was asked %d times; only the 3 valid requests reach it", n)
	}
}

// Every disagreement, in outcome or in the details a case names, is
// reported in one table.
func TestCheckPolicy_DisagreementsAreOneReadableTable(t *testing.T) {
	rec := &recTB{TB: t}
	testkit.CheckPolicy(rec, agentrt.DefaultPolicy(), policyTools(), []testkit.PolicyCase{
		{Name: "read is fine", Tool: "read", Args: `{"path":"a"}`, Want: agentrt.Allow},
		{Name: "rm should abort", Tool: "rm", Args: `{"path":"/"}`, Want: agentrt.Abort},
		{Name: "post kind", Tool: "post", Args: `{"url":"u"}`, Want: agentrt.RequireApproval, Kind: "network"},
		{Name: "bad args allowed?", Tool: "read", Args: `{"path":1}`, Want: agentrt.Allow},
	})
	if len(rec.errs) != 1 {
		t.Fatalf("%d reports, want one table:\n%s", len(rec.errs), strings.Join(rec.errs, "\n"))
	}
	table := rec.errs[0]
	for _, want := range []string{
		"3 of 4 cases disagree",
		"rm should abort", "abort", "deny: destructive is deny",
		"post kind", "require_approval (network)", `wrong kind "remote_mutation"`,
		"bad args allowed?", "refused: arguments do not match the schema",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "read is fine") {
		t.Errorf("an agreeing case is in the table:\n%s", table)
	}
}

// A case's View reaches the policy, and the request is in policy form.
func TestCheckPolicy_ViewAndPolicyFormReachThePolicy(t *testing.T) {
	var gotArgs string
	var gotSteps int
	p := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, v agentrt.RunView) (agentrt.PolicyDecision, error) {
		gotArgs, gotSteps = string(req.Args), v.Steps.Len()
		if v.Steps.Len() > 2 {
			return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "too many steps"}, nil
		}
		return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
	})
	view := agentrt.RunView{Run: agentrt.Run{ID: "r", Status: agentrt.RunRunning}, Steps: agentrt.NewSteps(make([]agentrt.Step, 3)...)}
	testkit.CheckPolicy(t, p, policyTools(), []testkit.PolicyCase{
		{Tool: "read", Args: "{\n \"path\" : \"<x>\" }", View: view, Want: agentrt.Deny, Reason: "too many"},
	})
	if gotSteps != 3 || gotArgs != `{"path":"<x>"}` {
		t.Fatalf("policy saw %d steps and args %s", gotSteps, gotArgs)
	}
}
