package disclosure_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/disclosure"
)

// The rules a run's run.created describes are rebuilt whole (block, off,
// output), and a description of another Disclosure is refused.
func TestFromDescription_RebuildsTheRulesARunRecorded(t *testing.T) {
	cfg := disclosure.Config{Block: []string{disclosure.RulePrivateKey}, Off: map[string][]string{"vault": {disclosure.RuleAWSAccessKeyID}},
		Output: map[string]disclosure.OutputRule{"lookup": {Allow: []string{"/name"}}}}
	r := rules(t, cfg)
	back, err := disclosure.FromDescription(r.Describe())
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Describe()) != string(r.Describe()) || !slices.Equal(back.RuleIDs(), r.RuleIDs()) {
		t.Fatalf("rebuilt %s, want %s", back.Describe(), r.Describe())
	}
	for _, desc := range []string{`{"vendor":"acme"}`, `{}`, `{"rules":["no_such_rule"]}`, `{"rules":["jwt"],"block":["no_such_rule"]}`, `[]`} {
		if _, err := disclosure.FromDescription(json.RawMessage(desc)); !errors.Is(err, disclosure.ErrNotDescribed) {
			t.Errorf("%s: %v, want ErrNotDescribed", desc, err)
		}
	}
}
