package disclosure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/webhook"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// postTool is a remote_mutation tool that records whether it ran.
func postTool(ran *int) agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "post", Description: "posts a request", SideEffect: agentrt.RemoteMutation,
			Timeout: time.Minute, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			*ran++
			return agentrt.ToolResult{Content: json.RawMessage(`{"ok":true}`)}, nil
		},
	}
}

// runPost starts a run whose one step calls post with args under pol and
// the default rules, and returns the run.
func runPost(t *testing.T, pol agentrt.Policy, args string, ran *int) (agentrt.Run, *sqlite.Store, *agentrt.Driver) {
	t.Helper()
	st := openDB(t)
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			return scripted.ToolCall("post", args, ""), nil
		}
		return scripted.Complete(`{}`), nil
	})
	drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: pol,
		Tools: []agentrt.Tool{postTool(ran)}, Disclosure: rules(t, disclosure.Default())}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	run, err := drv.StartWithID(context.Background(), "r", "post it", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return run, st, drv
}

// A remote call whose arguments carry an AWS key and a bearer token waits
// for approval under DefaultPolicy; the approval names each pointer and
// kind, and neither value is in its presentation, its capability or
// 'agentrt show'; the arguments the approval binds are unaltered.
func TestRules_RemoteCallCarryingAKeyWaitsForApprovalNamingPointerAndKind(t *testing.T) {
	key := corpus()[0].Value
	token := "3f9aK2mQ7xL0pR8v" + "T4wZ6yB1nC5dE9hJ"
	args := `{"url":"https://example.com/hook","body":{"note":"hello","aws":"` + key + `"},"headers":{"Authorization":"Bearer ` + token + `"}}`
	ran := 0
	run, st, drv := runPost(t, agentrt.DefaultPolicy(), args, &ran)
	if run.Status != agentrt.RunWaiting || ran != 0 {
		t.Fatalf("run is %s, the tool ran %d times; want WAITING and not run", run.Status, ran)
	}
	var show bytes.Buffer
	if code := cmdline.Run([]string{"-db", st.Path(), "show", "r"}, nil, &show, os.Stderr); code != 0 {
		t.Fatalf("agentrt show exited %d", code)
	}
	as, err := st.ListApprovals(context.Background(), "r")
	if err != nil || len(as) != 1 {
		t.Fatalf("approvals %+v, %v", as, err)
	}
	a := as[0]
	var p struct {
		Secrets []agentrt.ArgumentSecret `json:"secrets"`
		Args    map[string]any           `json:"args"`
	}
	if err := json.Unmarshal(a.Presentation, &p); err != nil {
		t.Fatal(err)
	}
	want := []agentrt.ArgumentSecret{{Pointer: "/body/aws", Kind: disclosure.RuleAWSAccessKeyID}, {Pointer: "/headers/Authorization", Kind: disclosure.RuleBearerToken}}
	if len(p.Secrets) != len(want) {
		t.Fatalf("the presentation names %+v, want %+v", p.Secrets, want)
	}
	for i := range want {
		if p.Secrets[i] != want[i] {
			t.Errorf("secret %d is %+v, want %+v", i, p.Secrets[i], want[i])
		}
	}
	for name, b := range map[string][]byte{"presentation": a.Presentation, "capability": a.Capability, "agentrt show": show.Bytes()} {
		for _, v := range []string{key, token} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("the %s holds a secret value", name)
			}
		}
	}
	for _, w := range []string{"/body/aws", disclosure.RuleAWSAccessKeyID, "/headers/Authorization", disclosure.RuleBearerToken, "hello"} {
		if !strings.Contains(show.String(), w) {
			t.Errorf("agentrt show does not say %q", w)
		}
	}
	if !strings.Contains(string(a.Request.Args), key) || !strings.Contains(string(a.Request.Args), token) {
		t.Errorf("the approval's request does not bind the arguments as they will execute: %s", a.Request.Args)
	}
	// Approved, the call runs with its arguments as the model made them:
	// the policy asked again on resume presents the same approval.
	if err := (agentrt.Operator{Store: st}).ApproveShown(context.Background(), "r", a.ID, a.Hash, "op", ""); err != nil {
		t.Fatal(err)
	}
	if run, err := drv.Resume(context.Background(), "r"); err != nil || run.Status != agentrt.RunCompleted || ran != 1 {
		t.Errorf("resumed: %s, %v; the tool ran %d times", run.Status, err, ran)
	}
}

// A policy that allows remote calls still sends one whose arguments carry
// a key to an operator, while the same call without a key runs; a read
// carrying a key is not held.
func TestSideEffectPolicy_RemoteCallCarryingAKeyNeedsApprovalEvenWhenAllowed(t *testing.T) {
	pol := agentrt.SideEffectPolicy{agentrt.RemoteMutation: agentrt.Allow}
	ran := 0
	run, _, _ := runPost(t, pol, `{"token":"`+corpus()[2].Value+`"}`, &ran)
	if run.Status != agentrt.RunWaiting || ran != 0 {
		t.Errorf("with a key: run is %s, the tool ran %d times; want WAITING and not run", run.Status, ran)
	}
	ran = 0
	run, _, _ = runPost(t, pol, `{"text":"hello"}`, &ran)
	if run.Status != agentrt.RunCompleted || ran != 1 {
		t.Errorf("without a key: run is %s, the tool ran %d times; want COMPLETED after one call", run.Status, ran)
	}
}

// Turning a rule off for a tool turns it off for that tool's arguments too.
func TestRules_ScanArgumentsHonoursOffForTheTool(t *testing.T) {
	args := json.RawMessage(`{"id":"` + corpus()[0].Value + `"}`)
	spec := agentrt.ToolSpec{Name: "vault"}
	on, err := rules(t, disclosure.Default()).ScanArguments(context.Background(), spec, args)
	if err != nil || len(on) != 1 || on[0].Pointer != "/id" || on[0].Kind != disclosure.RuleAWSAccessKeyID {
		t.Fatalf("default rules found %+v, %v", on, err)
	}
	off, err := rules(t, disclosure.Config{Off: map[string][]string{"vault": {disclosure.RuleAWSAccessKeyID}}}).ScanArguments(context.Background(), spec, args)
	if err != nil || len(off) != 0 {
		t.Errorf("with the rule off for vault it found %+v, %v", off, err)
	}
}

// Recheck hands the policy the same argument findings when it is given the
// rules, so DefaultPolicy's approval for a call carrying a key rechecks as
// the same; without them the policy asks for another approval.
func TestRecheck_WithTheRulesFindsTheSameArgumentSecrets(t *testing.T) {
	ran := 0
	_, st, _ := runPost(t, agentrt.DefaultPolicy(), `{"token":"`+corpus()[2].Value+`"}`, &ran)
	ctx := context.Background()
	with, err := agentrt.Recheck(ctx, st, "r", agentrt.DefaultPolicy(), agentrt.RecheckOptions{Disclosure: rules(t, disclosure.Default())})
	if err != nil || len(with.Evaluations) != 1 || !with.Same() {
		t.Fatalf("with the rules: %+v, %v", with, err)
	}
	without, err := agentrt.Recheck(ctx, st, "r", agentrt.DefaultPolicy(), agentrt.RecheckOptions{})
	if err != nil || len(without.Evaluations) != 1 || without.Evaluations[0].Result != agentrt.RecheckDifferent {
		t.Errorf("without the rules: %+v, %v; the check above proves nothing", without, err)
	}
}

// Every JSON that carries the approval of a call whose arguments hold a
// key shows the key's pointer redacted and names its kind: agentrt show
// -json, agentrt approve -json, and the webhook's list and show. The
// approval's hash still binds the arguments as they execute: approved
// with the hash the JSON carried, the call runs, and show -json of the
// finished run shows the step's arguments redacted as well.
func TestApprovalJSON_ShowsArgumentSecretsRedacted(t *testing.T) {
	key := corpus()[0].Value
	ran := 0
	_, st, drv := runPost(t, agentrt.DefaultPolicy(), `{"url":"https://example.com/hook","body":{"aws":"`+key+`"}}`, &ran)
	as, err := st.ListApprovals(context.Background(), "r")
	if err != nil || len(as) != 1 {
		t.Fatalf("approvals %+v, %v", as, err)
	}
	cli := func(args ...string) []byte {
		var out, errOut bytes.Buffer
		if code := cmdline.Run(append([]string{"-db", st.Path(), "-json"}, args...), nil, &out, &errOut); code != 0 {
			t.Fatalf("agentrt %v exited %d: %s", args, code, errOut.String())
		}
		return out.Bytes()
	}
	secret := []byte(`{"aws":"` + agentrt.DisclosureMarker(disclosure.RuleAWSAccessKeyID) + `"}`)
	check := func(name string, b []byte) {
		t.Helper()
		if bytes.Contains(b, []byte(key)) || !bytes.Contains(b, secret) || !bytes.Contains(b, []byte("/body/aws")) {
			t.Errorf("%s holds the key or lacks its marker and pointer: %s", name, b)
		}
	}
	check("show -json", cli("show", "r"))

	secretKey := bytes.Repeat([]byte("k"), 32)
	h, err := webhook.New(webhook.DefaultConfig(approver.New(st, nil), secretKey))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &webhook.Client{Base: srv.URL, Secret: secretKey}
	list, err := c.Pending(context.Background(), "r")
	if err != nil || len(list.Approvals) != 1 {
		t.Fatalf("webhook list: %+v, %v", list, err)
	}
	b, _ := json.Marshal(list)
	check("the webhook's list", b)
	shown, err := c.Show(context.Background(), "r", as[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(shown)
	check("the webhook's show", b)
	check("approve -json", cli("approve", "r", "-approval", as[0].ID, "-hash", shown.Hash))
	if run, err := drv.Resume(context.Background(), "r"); err != nil || run.Status != agentrt.RunCompleted || ran != 1 {
		t.Errorf("resumed: %s, %v; the tool ran %d times", run.Status, err, ran)
	}
	check("show -json of the finished run", cli("show", "r"))
}
