package policycli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/scripted"
)

// secretsPolicy sends a call whose arguments carry an AWS key to an
// operator, and allows the rest.
const secretsPolicy = `rules:
  - name: keys-go-to-an-operator
    when: request.secrets.exists(s, s.kind == "aws_access_key_id")
    outcome: require_approval
    kind: secret
    presentation: {secrets: request.secrets}
default: {outcome: allow}
`

// describedRules is a Disclosure of another kind than the module's, which
// describes itself.
type describedRules struct{ agentrt.DisclosureFunc }

func (describedRules) Describe() json.RawMessage { return json.RawMessage(`{"vendor":"acme"}`) }

// recordSecretRun records run-1: one post whose arguments carry an AWS
// key, judged by pf with d as the engine's disclosure.
func recordSecretRun(t *testing.T, dir, pf string, d agentrt.Disclosure) string {
	t.Helper()
	p, st, db := policyAndStore(t, dir, pf)
	defer st.Close()
	post := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "post", Description: "post", SideEffect: agentrt.RemoteMutation,
		Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) { return agentrt.ToolResult{}, nil }}
	key := "AKIA" + "Q3EGRIXY5TNWZ4VB"
	drv, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: p, Tools: []agentrt.Tool{post}, Disclosure: d},
		Agent:        &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("post", `{"aws":"`+key+`"}`, "post")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.StartWithID(context.Background(), "run-1", "g", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	return db
}

// recheck rebuilds the disclosure rules the run's run.created records, so
// a rule on request.secrets that held a call for approval holds it again
// (same, exit 0); a run judged by another kind of Disclosure is refused
// in one sentence rather than rechecked as if its arguments held none.
func TestRecheck_HandsThePolicyTheArgumentSecretsOfTheRunsRules(t *testing.T) {
	dir := t.TempDir()
	pf := write(t, dir, "policy.yaml", secretsPolicy)
	rules, err := disclosure.New(disclosure.Default())
	if err != nil {
		t.Fatal(err)
	}
	db := recordSecretRun(t, dir, pf, rules)
	r := run(t, "recheck", "-db", db, "-policy", pf, "run-1")
	if r.code != 0 || !strings.Contains(r.stdout, "step 0 post: recorded require_approval, now require_approval: same") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	other := describedRules{func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
		return agentrt.DisclosureOutcome{Content: in.Content, Summary: in.Summary, FailureMessage: in.FailureMessage, Blocks: in.Blocks}, nil
	}}
	db = recordSecretRun(t, t.TempDir(), pf, other)
	oneSentence(t, run(t, "recheck", "-db", db, "-policy", pf, "run-1"), "cannot rebuild")
}
