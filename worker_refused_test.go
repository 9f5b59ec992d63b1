package agentrt

import (
	"fmt"
	"testing"
)

// A worker that refuses more runs than maxRefusedRuns remembers only the
// newest maxRefusedRuns of them, so the skip list every claim sends stays
// bounded; a run refused again is not counted twice.
func TestWorker_RefusedRunsAreBounded(t *testing.T) {
	s := newRefusedSet(maxRefusedRuns)
	for i := range maxRefusedRuns + 500 {
		s.add(fmt.Sprintf("run-%05d", i))
		s.add(fmt.Sprintf("run-%05d", i))
	}
	if len(s.ids) != maxRefusedRuns || len(s.order) != maxRefusedRuns {
		t.Fatalf("the set holds %d ids (%d in order), want %d", len(s.ids), len(s.order), maxRefusedRuns)
	}
	if s.ids["run-00499"] || !s.ids["run-00500"] || !s.ids[fmt.Sprintf("run-%05d", maxRefusedRuns+499)] {
		t.Fatalf("the set did not drop exactly the oldest 500")
	}
	if cap(s.order) > 2*maxRefusedRuns {
		t.Fatalf("the order's array grew to %d", cap(s.order))
	}
}
