package agentrt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"
)

// chosen is text a model, a server or a tool chose, in fields that are not
// arguments or results.
const chosen = "zq9-chosen@example.org-zq9"

// chosenRuns writes two runs that put chosen text in every field a model,
// a provider, a tool or a policy quoting the arguments can fill besides
// arguments and results: "run-1" gets a caller's tracestate, the model's
// stop reason, a tool name
// the model made up, a tool's own failure class, a result block's MIME
// type, a policy's refusal quoting the arguments and a provider's error in
// limit.exceeded; "run-2" gets an approval whose reason quotes the
// arguments, and is cancelled. The store is closed on return.
func chosenRuns(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	st := openAt(t, path)
	defer st.Close()
	tools := []agentrt.Tool{
		kit.NewTool("fail", agentrt.ReadOnly, `{"type":"object"}`, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{}, classified{class: chosen}
		}),
		kit.NewTool("blocks", agentrt.ReadOnly, `{"type":"object"}`, func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{}`), Blocks: []agentrt.ResultBlock{{Type: agentrt.ResultText, MIMEType: chosen, Text: "hi"}}}, nil
		}),
		kit.NewTool("deny", agentrt.ReadOnly, `{"type":"object"}`, nil),
		kit.NewTool("send", agentrt.RemoteMutation, `{"type":"object"}`, nil),
	}
	policy := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		switch req.Spec.Name {
		case "deny":
			return agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "refused " + string(req.Args)}, nil
		case "send":
			return agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Reason: "ask about " + string(req.Args), Kind: "mail"}, nil
		}
		return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
	})
	m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{Text: "ok", StopReason: chosen, Usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}}
	args := `{"n":"` + chosen + `"}`
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Run.ID == "run-2" {
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "send", Args: json.RawMessage(args)}, nil
		}
		switch in.Steps.Len() {
		case 0:
			if _, err := in.Model.Generate(ctx, mcReq(20)); err != nil {
				return agentrt.Decision{}, err
			}
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: chosen, Args: json.RawMessage(`{}`)}, nil
		case 1:
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "fail", Args: json.RawMessage(`{}`)}, nil
		case 2:
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "blocks", Args: json.RawMessage(`{}`)}, nil
		case 3:
			return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "deny", Args: json.RawMessage(args)}, nil
		}
		return agentrt.Decision{}, &agentrt.ModelUnavailableError{Attempts: 1, Last: fmt.Errorf("the provider said %s", chosen)}
	})
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: policy, Tools: tools,
		Model: &agentrt.ModelConfig{Model: m}}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	traced := agentrt.WithTraceContext(ctx, agentrt.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", State: "vendor=" + chosen})
	if r, err := d.StartWithID(traced, "run-1", "g", agentrt.DefaultLimits()); err != nil || r.Reason != agentrt.ReasonModelUnavailable {
		t.Fatalf("run-1 = %s %s %q, %v", r.Status, r.Reason, r.ReasonDetail, err)
	}
	if r, err := d.StartWithID(ctx, "run-2", "g", agentrt.DefaultLimits()); err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("run-2 = %s, %v", r.Status, err)
	}
	if _, err := agentrt.Cancel(ctx, st, nil, "run-2", "op", "stop"); err != nil {
		t.Fatal(err)
	}
	requireChosenIn(t, st)
}

// requireChosenIn requires the chosen text in each field chosenRuns
// feeds, so that its absence after erasure proves something.
func requireChosenIn(t *testing.T, st agentrt.StoreReader) {
	t.Helper()
	got := map[string]bool{}
	for _, id := range []string{"run-1", "run-2"} {
		evs, err := st.ListEvents(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			v, err := agentrt.DecodePayload(e)
			if err != nil {
				t.Fatal(err)
			}
			switch p := v.(type) {
			case agentrt.RunCreatedPayload:
				got["run.created trace"] = got["run.created trace"] || p.Trace != nil && p.Trace.State == "vendor="+chosen
			case agentrt.Decision:
				got["step.decided tool"] = got["step.decided tool"] || p.Tool == chosen
			case agentrt.StepPolicyPayload:
				got["step.policy reason"] = got["step.policy reason"] || strings.Contains(p.Reason, chosen)
			case agentrt.ApprovalRequestedPayload:
				got["approval.requested reason"] = strings.Contains(p.Reason, chosen)
			case agentrt.ModelCallFinishedPayload:
				got["model.completed stop_reason"] = p.StopReason == chosen
			case agentrt.ToolFinishedPayload:
				got["step.tool_finished failure_class"] = got["step.tool_finished failure_class"] || string(p.FailureClass) == chosen
				got["step.tool_finished blocks mime_type"] = got["step.tool_finished blocks mime_type"] || len(p.Blocks) == 1 && p.Blocks[0].MIMEType == chosen
			case agentrt.LimitExceededPayload:
				got["limit.exceeded detail"] = strings.Contains(p.Detail, chosen)
			}
		}
	}
	for _, f := range []string{"run.created trace", "step.decided tool", "step.policy reason", "approval.requested reason", "model.completed stop_reason",
		"step.tool_finished failure_class", "step.tool_finished blocks mime_type", "limit.exceeded detail"} {
		if !got[f] {
			t.Errorf("the chosen text is not in %s before the erasure: the test would prove nothing there", f)
		}
	}
}

// Text a model, a provider, a tool or a policy quoting the arguments chose
// is in no byte of the database, its WAL or its shared-memory file after
// both runs are erased: the tool name the model made up, the policy's
// reasons, the stop reason, the tool's failure class, a block's MIME type
// and the provider's error in limit.exceeded.
func TestErase_ChosenTextInEveryFieldIsRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	chosenRuns(t, path)
	for _, id := range []string{"run-1", "run-2"} {
		if code, out, errOut := agentrtCLI(t, "-db", path, "erase", id, "-by", "dpo", "-reason", "art. 17 request"); code != 0 {
			t.Fatalf("erase %s = %d\n%s%s", id, code, out, errOut)
		}
	}
	for name, b := range testrig.DBFilesByName(t, path) {
		if i := bytes.Index(b, []byte(chosen)); i >= 0 {
			t.Errorf("%s still holds the chosen text at byte %d: %q", name, i, b[max(0, i-60):min(len(b), i+len(chosen)+20)])
		}
	}
	if code, out, errOut := agentrtCLI(t, "-db", path, "verify"); code != 0 {
		t.Fatalf("verify = %d\n%s%s", code, out, errOut)
	}
}
