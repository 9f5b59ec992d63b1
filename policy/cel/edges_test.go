package cel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

const denyLarge = `
rules:
  - name: large
    match: {tools: [pay]}
    when: args.amount > 1000
    outcome: deny
    reason: payments over 1000 are not allowed
  - name: pay
    match: {tools: [pay]}
    outcome: allow
default: {outcome: deny}
`

// A number a double cannot hold exactly (1000.00000000000000001 is the
// double 1000) is refused before any rule runs, so a deny rule comparing
// the double cannot let through the literal the tool would get; numbers a
// double holds, however written, are judged as before. Through the
// runtime the refusal is a denied step the model is told about, and the
// tool never runs.
func TestPolicy_NumbersThatADoubleCannotHoldAreRefused(t *testing.T) {
	p := mustParse(t, denyLarge)
	view := agentrt.RunView{}
	for _, c := range []struct {
		args string
		want agentrt.PolicyOutcome
		rule string
	}{
		{`{"amount":1000.00000000000000001}`, agentrt.Deny, "(arguments)"},
		{`{"amount":999.999999999999999999}`, agentrt.Deny, "(arguments)"},
		{`{"amount":12345678901234567890}`, agentrt.Deny, "(arguments)"},
		{`{"amount":1e-400}`, agentrt.Deny, "(arguments)"},
		{`{"nested":[{"x":0.10000000000000000555}],"amount":1}`, agentrt.Deny, "(arguments)"},
		{`{"amount":1000}`, agentrt.Allow, "pay"},
		{`{"amount":1000.5}`, agentrt.Deny, "large"},
		{`{"amount":0.1}`, agentrt.Allow, "pay"},
		{`{"amount":1e3}`, agentrt.Allow, "pay"},
		{`{"amount":1000.000}`, agentrt.Allow, "pay"},
		{`{"amount":18446744073709551616}`, agentrt.Deny, "large"}, // 2^64, a double exactly
		{`{"amount":0.30000000000000004}`, agentrt.Allow, "pay"},
	} {
		pd, rule, err := p.Decide(request("pay", agentrt.RemoteMutation, c.args), view)
		if err != nil || pd.Outcome != c.want || rule != c.rule {
			t.Errorf("%s: %s by %q, %v; want %s by %q", c.args, pd.Outcome, rule, err, c.want, c.rule)
		}
		if c.rule == "(arguments)" && !strings.Contains(pd.Reason, "cannot be held exactly by a double") {
			t.Errorf("%s: reason %q does not say why", c.args, pd.Reason)
		}
	}
	// A policy that never reads args does not look at them.
	byName := mustParse(t, "rules:\n  - name: pay\n    match: {tools: [pay]}\n    outcome: allow\ndefault: {outcome: deny}\n")
	if pd, _, err := byName.Decide(request("pay", agentrt.RemoteMutation, `{"amount":1000.00000000000000001}`), view); err != nil || pd.Outcome != agentrt.Allow {
		t.Errorf("a policy without args: %s, %v", pd.Outcome, err)
	}
	ex := p.Explain(request("pay", agentrt.RemoteMutation, `{"amount":1000.00000000000000001}`), view)
	if ex.Rule != "(arguments)" || len(ex.Rules) == 0 || !strings.HasPrefix(ex.Rules[0].Result, "refused") {
		t.Errorf("Explain: rule %q, %+v", ex.Rule, ex.Rules)
	}

	// Through the runtime: recorded as a denied step; the tool never runs.
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tool := &countedTool{ToolSpec: agentrt.ToolSpec{Name: "pay", Description: "pay", SideEffect: agentrt.RemoteMutation, Timeout: time.Second,
		InputSchema: []byte(`{"type":"object","properties":{"amount":{"type":"number"}}}`)}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: p, Tools: []agentrt.Tool{tool}}, Agent: &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("pay", `{"amount":1000.00000000000000001}`, "pay"), scripted.Complete(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.Start(context.Background(), "pay", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("Start = %s %s, %v", run.Status, run.ReasonDetail, err)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times with an amount the policy could not compare", n)
	}
	steps, err := st.ListSteps(context.Background(), run.ID)
	if err != nil || len(steps) == 0 || steps[0].Status != agentrt.StepFailed || steps[0].Observation == nil ||
		!strings.Contains(steps[0].Observation.Summary, "cannot be held exactly") {
		t.Fatalf("the first step: %+v, %v", steps, err)
	}
}

// require_signature: true makes a rule's approvals need a signed grant:
// the decision carries it (agentrt-policy check and explain show it:
// cmd/internal/policycli), it is refused on an outcome that grants nothing and when not a boolean,
// and through the runtime an unsigned approval does not let the tool run.
func TestPolicy_RuleRequiresASignedGrant(t *testing.T) {
	src := `
rules:
  - name: wire
    match: {tools: [pay]}
    outcome: require_approval
    require_signature: true
    reason: a wire needs a signed approval
  - name: note
    match: {tools: [note]}
    outcome: require_approval
default: {outcome: deny}
`
	p := mustParse(t, src)
	pd, rule, err := p.Decide(request("pay", agentrt.RemoteMutation, `{}`), agentrt.RunView{})
	if err != nil || rule != "wire" || pd.Outcome != agentrt.RequireApproval || !pd.RequireSignature {
		t.Fatalf("pay: %+v by %q, %v", pd, rule, err)
	}
	if pd, _, _ := p.Decide(request("note", agentrt.LocalMutation, `{}`), agentrt.RunView{}); pd.RequireSignature {
		t.Fatal("a rule without require_signature requires a signature")
	}
	if got := p.SignedGrantRules(); len(got) != 1 || got[0] != "wire" {
		t.Fatalf("SignedGrantRules = %q", got)
	}
	if q := mustParse(t, strings.Replace(src, "require_signature: true", "require_signature: false", 1)); q.PolicyID() == p.PolicyID() {
		t.Fatal("require_signature does not change the policy id")
	}
	for bad, want := range map[string]string{
		strings.Replace(src, "outcome: require_approval\n    require_signature: true", "outcome: allow\n    require_signature: true", 1): "only for outcome require_approval",
		strings.Replace(src, "require_signature: true", `require_signature: "yes"`, 1):                                                   "must be true or false",
	} {
		_, err := cel.Parse([]byte(bad), cel.YAML)
		var fe *cel.FileError
		if !errors.As(err, &fe) || fe.Field != "require_signature" || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want a FileError on require_signature saying %q", err, want)
		}
	}

	// check and explain.
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	// Through the runtime: an unsigned approval is refused at resume and
	// the tool never runs.
	st, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tool := &countedTool{ToolSpec: agentrt.ToolSpec{Name: "pay", Description: "pay", SideEffect: agentrt.RemoteMutation, Timeout: time.Second,
		InputSchema: []byte(`{"type":"object"}`)}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: p, Tools: []agentrt.Tool{tool}}, Agent: &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("pay", `{}`, "pay"), scripted.Complete(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, err := d.Start(ctx, "pay", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v", run.Status, err)
	}
	as, _ := st.ListApprovals(ctx, run.ID)
	if len(as) != 1 {
		t.Fatalf("%d approvals", len(as))
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, run.ID, as[0].ID, as[0].Hash, "ops", "unsigned"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resume(ctx, run.ID); !errors.Is(err, agentrt.ErrUnsignedGrant) {
		t.Fatalf("Resume after an unsigned approval = %v, want ErrUnsignedGrant", err)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times on an unsigned grant", n)
	}
}

// clean_path resolves //, /./ and .., and refuses a NUL, an NFD accent and
// a fullwidth solidus; with the example policy's ASCII allowlist a
// Cyrillic lookalike matches no allowing rule. nfc normalises. Each
// lookalike of a path the example denies is denied too (or fails the
// policy, which allows nothing), never allowed.
func TestPolicy_PathHelperRefusesLookalikes(t *testing.T) {
	for in, want := range map[string]string{
		"/project//a/./b/../c": "/project/a/c",
		"/project/../etc":      "/etc",
		"/project/caf\u00e9":   "/project/caf\u00e9",
	} {
		if got, err := cel.CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/project/a\x00/../../etc/shadow", "/project/cafe\u0301", "/project\uff0f..\uff0fetc", "/project/\u2024\u2024/etc", "/project/\xff"} {
		if got, err := cel.CleanPath(in); err == nil {
			t.Errorf("CleanPath(%q) = %q, want an error", in, got)
		}
	}

	p, _ := examplePolicy(t, t.TempDir(), "")
	view := agentrt.RunView{Run: agentrt.Run{StepCount: 1}}
	read := func(path string) (agentrt.PolicyOutcome, string, error) {
		pd, rule, err := p.Decide(request("fs.read_file", agentrt.ReadOnly, `{"path":"`+path+`"}`), view)
		return pd.Outcome, rule, err
	}
	if o, rule, err := read("/project/README.md"); err != nil || o != agentrt.Allow || rule != "read-project" {
		t.Fatalf("a plain project read: %s by %s, %v", o, rule, err)
	}
	for name, path := range map[string]string{
		"parent reference":   "/project/../etc/shadow",
		"double slash climb": "/project//..//etc/shadow",
		"Cyrillic а":         "/\u0440roject/README.md", // р, U+0440
		"Cyrillic in name":   "/project/READM\u0415.md", // Е, U+0415
		"fullwidth solidus":  "/project\uff0f..\uff0fetc\uff0fshadow",
		"NFD accent":         "/project/cafe\u0301",
		"embedded NUL":       `/project/notes\u0000/../../etc/shadow`,
		"one-dot leaders":    "/project/\u2024\u2024/etc/shadow",
	} {
		o, rule, err := read(path)
		if err == nil && o == agentrt.Allow {
			t.Errorf("%s (%q): allowed by %s", name, path, rule)
		}
	}
	// nfc: two spellings of one name compare equal after it.
	q := mustParse(t, "rules:\n  - name: cafe\n    when: nfc(args.name) == nfc(\"caf\\u00e9\")\n    outcome: allow\ndefault: {outcome: deny}\n")
	if pd, _, err := q.Decide(request("t", agentrt.ReadOnly, `{"name":"cafe\u0301"}`), view); err != nil || pd.Outcome != agentrt.Allow {
		t.Errorf("nfc of an NFD name: %s, %v", pd.Outcome, err)
	}
}
