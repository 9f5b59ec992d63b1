package cel_test

import (
	"errors"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/policy/cel"
)

// stages on a rule ask for votes: a payment over 10000 needs two of
// finance, not the requester. The decision carries the requirement; a
// changed m changes the policy's id (so votes bound to the old one do not
// carry over); a stage that cannot be met or is misspelt is refused where
// the file is loaded, naming the field.
func TestPolicy_RuleAsksForStagesOfVotes(t *testing.T) {
	src := `
rules:
  - name: big-payment
    match: {tools: [pay]}
    when: args.eur > 10000
    outcome: require_approval
    kind: payment
    stages:
      - {quantifier: m_of_n, m: 2, roles: [finance], exclude: [requester]}
default: {outcome: allow}
`
	p := mustParse(t, src)
	pd, rule, err := p.Decide(request("pay", agentrt.RemoteMutation, `{"eur":25000}`), agentrt.RunView{})
	if err != nil || rule != "big-payment" || pd.Requirement == nil {
		t.Fatalf("pay: %+v by %q, %v", pd, rule, err)
	}
	if st := pd.Requirement.Stages; len(st) != 1 || st[0].Quantifier != agentrt.QuantMofN || st[0].M != 2 ||
		st[0].Roles[0] != "finance" || st[0].Exclude[0] != agentrt.ExcludeRequester {
		t.Fatalf("stages = %+v", st)
	}
	if pd, _, _ := p.Decide(request("pay", agentrt.RemoteMutation, `{"eur":5}`), agentrt.RunView{}); pd.Requirement != nil {
		t.Fatal("a small payment asks for votes")
	}
	if q := mustParse(t, strings.Replace(src, "m: 2", "m: 3", 1)); q.PolicyID() == p.PolicyID() {
		t.Fatal("a changed m does not change the policy id")
	}
	for bad, want := range map[string]string{
		strings.Replace(src, "quantifier: m_of_n, m: 2", "quantifier: any, m: 2", 1):              "only m_of_n takes",
		strings.Replace(src, "quantifier: m_of_n", "quantifier: most", 1):                         "want all, any or m_of_n",
		strings.Replace(src, "roles: [finance]", "role: [finance]", 1):                            `unknown field "role"`,
		strings.Replace(src, "exclude: [requester]", "exclude: [bob]", 1):                         "only \"requester\"",
		strings.Replace(src, "outcome: require_approval\n    kind: payment", "outcome: allow", 1): "only for outcome require_approval",
	} {
		_, err := cel.Parse([]byte(bad), cel.YAML)
		var fe *cel.FileError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "stages") || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want a FileError on stages saying %q", err, want)
		}
	}
}
