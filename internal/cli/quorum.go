package cli

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
)

// stagesFor reads what approval a of its run still needs, when it has a
// requirement: its votes from the chain, counted with the approvers as
// they are now. Nil for an approval one decision grants, or when
// something could not be read (show prints what it can).
func stagesFor(st agentrt.StoreReader, a agentrt.Approval) []agentrt.StageProgress {
	ctx := background()
	whole, err := st.GetApproval(ctx, a.RunID, a.ID)
	if err != nil || whole.Requirement == nil {
		return nil
	}
	run, err := st.GetRun(ctx, a.RunID)
	if err != nil {
		return nil
	}
	aps, err := st.ListApprovers(ctx)
	if err != nil {
		return nil
	}
	evs, err := st.ListEvents(ctx, a.RunID)
	if err != nil {
		return nil
	}
	var votes []agentrt.Vote
	for _, ev := range evs {
		if v, ok := agentrt.VoteOf(ev); ok && v.ApprovalID == a.ID {
			votes = append(votes, v)
		}
	}
	return agentrt.StageProgressOf(whole, run.Limits.Labels, aps, votes)
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
