package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/view"
)

// maxDisclosurePointers bounds the pointers one step's disclosure line names.
const maxDisclosurePointers = 8

// writeDisclosures prints, for each of the page's steps whose outcome
// disclosure rules changed, one line from its disclosure.applied event:
// how many findings, what was done, by which rules, and where (never the
// value, which the chain does not hold).
func writeDisclosures(p *printer, st agentrt.StoreReader, runID string, steps []view.StepSummary) {
	ids := make([]string, 0, min(len(steps), maxBlockSteps))
	index := map[string]int{}
	for _, s := range steps {
		if len(ids) == maxBlockSteps {
			break
		}
		ids = append(ids, s.ID)
		index[s.ID] = s.Index
	}
	evs, err := st.ListStepsEvents(background(), runID, ids, agentrt.EventDisclosureApplied, blockEvents)
	if err != nil || len(evs) == 0 {
		return
	}
	p.printf("\n")
	for _, ev := range evs {
		d, err := agentrt.PayloadAs[agentrt.DisclosureAppliedPayload](ev)
		if err != nil {
			continue
		}
		p.printf("disclosure  step %d %s: %s\n", index[ev.StepID], dash(clip(d.Tool, 40)), disclosureLine(d))
	}
}

// disclosureLine says what one disclosure.applied records.
func disclosureLine(d agentrt.DisclosureAppliedPayload) string {
	acts := map[agentrt.DisclosureAction]int{}
	var ptrs []string
	for _, f := range d.Findings {
		acts[f.Action]++
		if !slices.Contains(ptrs, f.Pointer) {
			ptrs = append(ptrs, f.Pointer)
		}
	}
	var did []string
	for _, a := range []agentrt.DisclosureAction{agentrt.DisclosureRedacted, agentrt.DisclosureRemoved, agentrt.DisclosureBlocked} {
		if acts[a] > 0 {
			did = append(did, fmt.Sprintf("%d %s", acts[a], a))
		}
	}
	where := ptrs
	if len(where) > maxDisclosurePointers {
		where = where[:maxDisclosurePointers]
	}
	for i, w := range where {
		where[i] = clip(w, 80)
	}
	line := fmt.Sprintf("%s by %s at %s", strings.Join(did, ", "), clip(strings.Join(d.Rules, ", "), 200), strings.Join(where, ", "))
	if more := len(ptrs) - len(where); more > 0 {
		line += fmt.Sprintf(" and %d more place(s)", more)
	}
	if d.Blocked {
		line += "; the result was withheld"
	}
	return line
}
