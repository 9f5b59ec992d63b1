package cel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// fuzzPolicy denies reads under /etc, reads that climb with "..", and
// payments over 1000; it allows other reads and small payments. Its
// oracle below says what it may allow.
const fuzzPolicy = `
rules:
  - name: no-etc
    match: {tools: [fs.read]}
    when: '!has(args.path) || type(args.path) != string || args.path.startsWith("/etc") || args.path.contains("..")'
    outcome: deny
  - name: read
    match: {tools: [fs.read]}
    outcome: allow
  - name: big
    match: {tools: [pay]}
    when: 'type(args.amount) != int && type(args.amount) != double || args.amount > 1000 || args.amount <= 0'
    outcome: deny
  - name: small
    match: {tools: [pay]}
    outcome: allow
default: {outcome: deny}
`

// mayAllow is the oracle: what fuzzPolicy may allow, decided in Go.
func mayAllow(tool string, args []byte) bool {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return false
	}
	switch tool {
	case "fs.read":
		p, ok := m["path"].(string)
		return ok && !strings.HasPrefix(p, "/etc") && !strings.Contains(p, "..")
	case "pay":
		a, ok := m["amount"].(float64)
		return ok && a > 0 && a <= 1000
	}
	return false
}

// Over any arguments, Evaluate never panics, never returns an outcome with
// an error, and never allows what the file denies.
func FuzzPolicy_ArgsNeverAllowWhatTheFileDenies(f *testing.F) {
	p := mustParse(f, fuzzPolicy)
	for _, s := range []string{`{"path":"/project/a"}`, `{"path":"/etc/passwd"}`, `{"path":"/a/../etc"}`, `{"path":7}`, `{}`,
		`{"amount":5}`, `{"amount":1000.0001}`, `{"amount":-1}`, `{"amount":1e400}`, `{"amount":"5"}`, `[1]`, `{"path":"\u002fetc"}`,
		`{"path":"/\u0065tc"}`, `{"amount":99999999999999999999}`, `{"path":"/pro\"ject"}`} {
		f.Add("fs.read", s)
		f.Add("pay", s)
	}
	f.Fuzz(func(t *testing.T, tool, raw string) {
		if agentrt.CheckJSON([]byte(raw)) != nil {
			return // the runtime refuses it before any policy
		}
		args, err := agentrt.PolicyJSON([]byte(raw))
		if err != nil {
			return
		}
		pd, err := p.Evaluate(context.Background(), request(tool, agentrt.ReadOnly, string(args)), agentrt.RunView{})
		if err != nil {
			if pd.Outcome != "" {
				t.Fatalf("error %v came with outcome %s", err, pd.Outcome)
			}
			return
		}
		if pd.Outcome == agentrt.Allow && !mayAllow(tool, args) {
			t.Fatalf("allowed %s %s, which the file denies (rule reason %q)", tool, args, pd.Reason)
		}
		if !pd.Outcome.Valid() {
			t.Fatalf("unknown outcome %q", pd.Outcome)
		}
	})
}
