package cli

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
)

// stagesFor is agentrt.ApprovalStages, nil when something could not be
// read (show prints what it can).
func stagesFor(st agentrt.StoreReader, a agentrt.Approval) []agentrt.StageProgress {
	stages, _ := agentrt.ApprovalStages(background(), st, a)
	return stages
}

// pendingJSON is a pending approval in show -json: the approval and, when
// it asks for votes, each stage as show prints it.
type pendingJSON struct {
	agentrt.Approval
	Stages []stageJSON `json:"stages,omitempty"`
}

// stageJSON is a stage's progress and how many votes it still needs.
type stageJSON struct {
	agentrt.StageProgress
	Remaining int `json:"remaining"`
}

// pendingWithStages pairs each pending approval with its stages.
func pendingWithStages(st agentrt.StoreReader, pending []agentrt.Approval) []pendingJSON {
	out := make([]pendingJSON, 0, len(pending))
	for _, a := range pending {
		pj := pendingJSON{Approval: a}
		for _, s := range stagesFor(st, a) {
			if s.Counted == nil {
				s.Counted = []string{}
			}
			pj.Stages = append(pj.Stages, stageJSON{StageProgress: s, Remaining: max(s.Need-len(s.Counted), 0)})
		}
		out = append(out, pj)
	}
	return out
}

// writeStages prints one line per stage: what it asks, who counted, and
// who may still vote.
func writeStages(p *printer, stages []agentrt.StageProgress) {
	if len(stages) == 0 {
		return
	}
	p.printf("  requires      %d stage(s), in order; each approver's vote counts once\n", len(stages))
	for _, s := range stages {
		ask := string(s.Stage.Quantifier)
		if s.Stage.Quantifier == agentrt.QuantMofN {
			ask = fmt.Sprintf("%d of", s.Stage.M)
		}
		var who []string
		if len(s.Stage.Roles) > 0 {
			who = append(who, "role "+strings.Join(s.Stage.Roles, ","))
		}
		if len(s.Stage.Approvers) > 0 {
			who = append(who, strings.Join(s.Stage.Approvers, ","))
		}
		if len(s.Stage.Exclude) > 0 {
			who = append(who, "not the "+strings.Join(s.Stage.Exclude, ","))
		}
		state := fmt.Sprintf("%d of %d", len(s.Counted), s.Need)
		if len(s.Counted) > 0 {
			state += " (" + strings.Join(s.Counted, ", ") + ")"
		}
		switch {
		case s.Met:
			state += ", met"
		case len(s.Open) > 0:
			state += "; may still vote: " + strings.Join(s.Open, ", ")
		default:
			state += "; nobody left who may vote"
		}
		p.printf("  stage %d       %s %s: %s\n", s.Index, ask, bounded(strings.Join(who, "; ")), bounded(state))
	}
}
