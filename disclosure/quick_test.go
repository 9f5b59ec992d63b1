package disclosure

import "testing"

// Every rule has a quick condition, so none is tried on every string of
// every outcome.
func TestQuick_EveryRuleHasACondition(t *testing.T) {
	ds, err := detectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if quick[d.id] == nil {
			t.Errorf("rule %s has no quick condition", d.id)
		}
	}
}
