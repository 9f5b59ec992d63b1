package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// The run page shows a step's call id (Decision.CallID) beside its tool,
// escaped by the template like any text a caller chose.
func TestHandler_RunPageShowsTheCallID(t *testing.T) {
	st := openStore(t)
	read := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "read", Description: "read", SideEffect: agentrt.ReadOnly,
		Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) { return agentrt.ToolResult{}, nil }}
	_, s, step := kit.BeginGate(t, agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{read}},
		"run-1", "goal", agentrt.FrameworkLimits())
	ctx := context.Background()
	if _, err := step.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", Args: json.RawMessage(`{}`), CallID: "toolu_<b>9"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rec := signedIn(t, st)("/runs/run-1")
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `<code class="call-id">[toolu_&lt;b&gt;9]</code>`) || strings.Contains(body, "toolu_<b>") {
		t.Fatalf("run page: %d, want the call id escaped beside the tool\n%s", rec.Code, body)
	}
}
