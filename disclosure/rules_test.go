package disclosure_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/internal/testrig"
)

// recordTool returns a fixed record: a user with a password hash, an API
// token and a list of sessions.
func recordTool(name string) agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: name, Description: "looks a user up", SideEffect: agentrt.ReadOnly,
			Timeout: time.Minute, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"user":{"name":"ada","email":"ada@example.com","password_hash":"HASHVALUE-9c1e"},` +
				`"sessions":[{"id":"s1","ip":"10.0.0.1","cookie":"COOKIE-ONE"},{"id":"s2","ip":"10.0.0.2","cookie":"COOKIE-TWO"}],"note":"ok"}`)}, nil
		},
	}
}

// through runs one call of tool through a Gate with rules d and returns
// the observation and the database's raw bytes.
func through(t *testing.T, d agentrt.Disclosure, tool agentrt.Tool) (agentrt.Observation, []byte) {
	t.Helper()
	st := openDB(t)
	gate, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{tool}, Disclosure: d}})
	if err != nil {
		t.Fatal(err)
	}
	var obs agentrt.Observation
	if err := json.Unmarshal(gateCall(t, gate, "r", tool.Spec().Name), &obs); err != nil {
		t.Fatal(err)
	}
	return obs, testrig.DBFiles(t, st.Path())
}

// Fields outside a tool's allow-list never reach the host or the record;
// "*" stands for every array item; the array keeps its length; a pointer
// in the allow-list the tool did not return adds nothing.
func TestRules_FieldOutsideTheAllowListNeverReachesTheModel(t *testing.T) {
	r := rules(t, disclosure.Config{Output: map[string]disclosure.OutputRule{
		"lookup": {Allow: []string{"/user/name", "/sessions/*/id", "/missing/field"}},
	}})
	obs, raw := through(t, r, recordTool("lookup"))
	want := `{"user":{"name":"ada"},"sessions":[{"id":"s1"},{"id":"s2"}]}`
	if obs.Kind != agentrt.ObsToolResult || string(obs.Content) != want {
		t.Fatalf("disclosed %s %s, want %s", obs.Kind, obs.Content, want)
	}
	for _, gone := range []string{"HASHVALUE-9c1e", "COOKIE-ONE", "COOKIE-TWO", "ada@example.com", "10.0.0.2"} {
		if strings.Contains(string(raw), gone) {
			t.Errorf("the database holds %q, outside the allow-list", gone)
		}
	}
	if strings.Contains(string(obs.Content), "missing") {
		t.Error("an allow-list pointer the tool did not return was added")
	}
}

// A never-export pointer present in a result withholds it whole, even when
// the allow-list covers it; so does a field outside the list when the rule
// says error. Nothing of the result is stored.
func TestRules_NeverExportAndOutsideErrorFailClosed(t *testing.T) {
	for name, rule := range map[string]disclosure.OutputRule{
		"never export":  {Allow: []string{"/user", "/sessions"}, Never: []string{"/user/password_hash"}},
		"outside error": {Allow: []string{"/user/name"}, Outside: disclosure.OutsideError},
	} {
		t.Run(name, func(t *testing.T) {
			obs, raw := through(t, rules(t, disclosure.Config{Output: map[string]disclosure.OutputRule{"lookup": rule}}), recordTool("lookup"))
			if obs.Kind != agentrt.ObsToolError || !strings.Contains(string(obs.Content), `"failure":"disclosure"`) {
				t.Fatalf("observation %s %s, want a disclosure tool error", obs.Kind, obs.Content)
			}
			for _, gone := range []string{"HASHVALUE-9c1e", "COOKIE-ONE", "ada@example.com"} {
				if strings.Contains(string(raw), gone) {
					t.Errorf("the database holds %q from a withheld result", gone)
				}
			}
		})
	}
}

// A secret rule turned off for one tool leaves that tool's findings in
// place and still redacts the same secret from another tool; a rule named
// in Block withholds the result instead of redacting it.
func TestRules_OffForANamedToolAndBlockPerRule(t *testing.T) {
	aws := corpus()[0].Value
	tool := func(name string) agentrt.Tool {
		return agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: name, Description: "x", SideEffect: agentrt.ReadOnly, Timeout: time.Minute,
			InputSchema: json.RawMessage(`{"type":"object"}`)},
			Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
				return agentrt.ToolResult{Content: json.RawMessage(`{"key":"` + aws + `"}`)}, nil
			}}
	}
	r := rules(t, disclosure.Config{Off: map[string][]string{"vault": {disclosure.RuleAWSAccessKeyID}}})
	if obs, _ := through(t, r, tool("vault")); !strings.Contains(string(obs.Content), aws) {
		t.Errorf("the rule turned off for vault still redacted: %s", obs.Content)
	}
	if obs, _ := through(t, r, tool("other")); strings.Contains(string(obs.Content), aws) ||
		!strings.Contains(string(obs.Content), "[REDACTED:aws_access_key_id]") {
		t.Errorf("another tool's result was not redacted: %s", obs.Content)
	}
	b := rules(t, disclosure.Config{Block: []string{disclosure.RuleAWSAccessKeyID}})
	if obs, raw := through(t, b, tool("other")); obs.Kind != agentrt.ObsToolError || strings.Contains(string(raw), aws) {
		t.Errorf("a blocking rule's finding gave %s %s", obs.Kind, obs.Content)
	}
	if _, err := disclosure.New(disclosure.Config{Block: []string{"no_such_rule"}}); err == nil || !strings.Contains(err.Error(), "no_such_rule") {
		t.Errorf("an unknown rule id: %v", err)
	}
	if _, err := disclosure.New(disclosure.Config{Output: map[string]disclosure.OutputRule{"t": {Allow: []string{"user"}}}}); err == nil {
		t.Error("a pointer without a leading slash was accepted")
	}
}

// A secret of a known format written as prose and logs write it, next to
// a comma, in parentheses, brackets or quotes, is found as it is between
// blanks: the library's patterns take a value only between blanks.
func TestRules_SecretBesidePunctuationIsFound(t *testing.T) {
	r := rules(t, disclosure.Default())
	for _, s := range corpus() {
		if s.Text != "" || strings.Contains(s.Value, "\n") {
			continue // the formats written alone
		}
		for _, form := range []string{"use %s, then", "key (%s)", "[%s]", "token='%s';", "<%s>", "{%s}"} {
			text := strings.Replace(form, "%s", s.Value, 1)
			c, _ := json.Marshal(map[string]string{"text": text})
			out, err := r.Disclose(context.Background(), agentrt.DisclosureInput{Tool: agentrt.ToolSpec{Name: "t"}, Kind: agentrt.ObsToolResult, Content: c})
			if err != nil {
				t.Fatal(err)
			}
			if got := leaks(out.Content); len(got) != 0 {
				t.Errorf("%s written as %q passed: %s", s.Format, form, out.Content)
			}
		}
	}
}
