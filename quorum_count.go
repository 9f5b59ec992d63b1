package agentrt

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// quorumCount counts votes on one approval against its requirement, with
// the approvers as they are now: a removed approver, one whose roles or
// scope no longer fit, and the run's requester where a stage excludes it
// count for nothing. The deciding transaction counts the store's votes;
// execution and verify count the chain's.
type quorumCount struct {
	approval  Approval
	labels    string
	approvers []EnrolledApprover
}

func (q quorumCount) lookup(id string) (EnrolledApprover, bool) {
	for _, a := range q.approvers {
		if a.ID == id {
			return a, true
		}
	}
	return EnrolledApprover{}, false
}

// inScope reports whether ap may decide the approval at all, and if not
// why, in a phrase.
func (q quorumCount) inScope(ap EnrolledApprover) (bool, string) {
	if ap.DecodeError != "" {
		return false, "its stored row will not decode"
	}
	if ap.Removed() {
		return false, "it was removed"
	}
	if ok, what := ap.Scope.Covers(q.approval, q.labels); !ok {
		return false, "its scope does not cover " + what
	}
	return true, ""
}

// eligible reports whether ap may vote in stage s.
func (q quorumCount) eligible(ap EnrolledApprover, s Stage) bool {
	if ok, _ := q.inScope(ap); !ok {
		return false
	}
	if slices.Contains(s.Exclude, ExcludeRequester) && ap.Name == Requester(q.labels) {
		return false
	}
	if slices.Contains(s.Approvers, ap.ID) || slices.Contains(s.Approvers, ap.Name) {
		return true
	}
	for _, r := range ap.Roles {
		if slices.Contains(s.Roles, r) {
			return true
		}
	}
	return false
}

// need is how many votes meet stage s: all counts who may vote now.
func (q quorumCount) need(s Stage) int {
	switch s.Quantifier {
	case QuantMofN:
		return s.M
	case QuantAll:
		n := 0
		for _, a := range q.approvers {
			if q.eligible(a, s) {
				n++
			}
		}
		return max(n, 1)
	}
	return 1
}

// progress replays the approving votes in order. A vote counts when its
// approver has not counted before, may vote in the stage open at that
// point, and names that stage; each stage is met by its own votes, in
// order. counted says which of votes counted.
func (q quorumCount) progress(votes []Vote) (stages []StageProgress, counted []bool) {
	req := q.approval.Requirement
	if req == nil {
		return nil, make([]bool, len(votes))
	}
	stages = make([]StageProgress, len(req.Stages))
	for i, s := range req.Stages {
		stages[i] = StageProgress{Index: i + 1, Stage: s, Need: q.need(s), Counted: []string{}}
	}
	counted = make([]bool, len(votes))
	seen := map[string]bool{}
	cur := 0
	for i, v := range votes {
		if v.Decision != StatementApprove || cur >= len(stages) || seen[v.ApproverID] || v.Stage != cur+1 {
			continue
		}
		ap, ok := q.lookup(v.ApproverID)
		if !ok || !q.eligible(ap, req.Stages[cur]) {
			continue
		}
		seen[v.ApproverID], counted[i] = true, true
		st := &stages[cur]
		st.Counted = append(st.Counted, ap.Name)
		if len(st.Counted) >= st.Need {
			st.Met = true
			cur++
		}
	}
	for i := range stages {
		if stages[i].Met {
			continue
		}
		for _, a := range q.approvers {
			if !seen[a.ID] && q.eligible(a, req.Stages[i]) {
				stages[i].Open = append(stages[i].Open, a.Name)
			}
		}
	}
	return stages, counted
}

// met reports whether every stage is met.
func met(stages []StageProgress) bool {
	for _, s := range stages {
		if !s.Met {
			return false
		}
	}
	return len(stages) > 0
}

// openStage is the 1-based index of the first stage not met, or 0.
func openStage(stages []StageProgress) int {
	for _, s := range stages {
		if !s.Met {
			return s.Index
		}
	}
	return 0
}

// Remaining says in one line what each stage still needs: "stage 1
// (m_of_n 2, roles finance): 1 of 2, may still vote: bob, carol".
func Remaining(stages []StageProgress) string {
	var parts []string
	for _, s := range stages {
		who := strings.Join(append(append([]string{}, s.Stage.Roles...), s.Stage.Approvers...), ",")
		p := fmt.Sprintf("stage %d (%s", s.Index, s.Stage.Quantifier)
		if s.Stage.Quantifier == QuantMofN {
			p += fmt.Sprintf(" %d", s.Stage.M)
		}
		p += fmt.Sprintf(" of %s): %d of %d", who, len(s.Counted), s.Need)
		if len(s.Counted) > 0 {
			p += " by " + strings.Join(s.Counted, ", ")
		}
		switch {
		case s.Met:
			p += ", met"
		case len(s.Open) > 0:
			p += ", may still vote: " + strings.Join(s.Open, ", ")
		default:
			p += ", nobody left who may vote"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// StageProgressOf counts the votes on approval a of a run carrying labels,
// with the approvers as they are now: what 'agentrt show' and the console
// print. It checks no signature; execution and verify do.
func StageProgressOf(a Approval, labels string, approvers []EnrolledApprover, votes []Vote) []StageProgress {
	stages, _ := quorumCount{approval: a, labels: labels, approvers: approvers}.progress(votes)
	return stages
}

// ApprovalStages reads how far approval a is: its votes as the chain
// records them (approval.voted events of its run), counted against its
// requirement with the approvers as they are now. Nil for an approval one
// decision grants. It checks no signature, so it is for showing;
// execution and 'agentrt verify -decisions' check every vote.
func ApprovalStages(ctx context.Context, st StoreReader, a Approval) ([]StageProgress, error) {
	whole, err := st.GetApproval(ctx, a.RunID, a.ID)
	if err != nil || whole.Requirement == nil {
		return nil, err
	}
	run, err := st.GetRun(ctx, a.RunID)
	if err != nil {
		return nil, err
	}
	aps, err := st.ListApprovers(ctx)
	if err != nil {
		return nil, err
	}
	var votes []Vote
	for after := int64(0); ; {
		evs, err := st.ListStepEvents(ctx, a.RunID, whole.StepID, after, stepEventsPage)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Seq
		for _, ev := range evs {
			if v, ok := VoteOf(ev); ok && v.ApprovalID == a.ID {
				votes = append(votes, v)
			}
		}
	}
	return StageProgressOf(whole, run.Limits.Labels, aps, votes), nil
}
