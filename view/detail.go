package view

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt"
)

// StepSummary is one step as an operator surface lists it. Text fields are
// bounded by BoundString and Args by BoundRaw.
type StepSummary struct {
	Index    int                  `json:"index"`
	ID       string               `json:"id"`
	Status   agentrt.StepStatus   `json:"status"`
	Decision agentrt.DecisionKind `json:"decision,omitempty"`
	Tool     string               `json:"tool,omitempty"`
	// CallID is the caller's own id for the call (Decision.CallID).
	CallID      string                  `json:"call_id,omitempty"`
	Args        json.RawMessage         `json:"args,omitempty"`
	Policy      agentrt.PolicyOutcome   `json:"policy,omitempty"`
	Observation agentrt.ObservationKind `json:"observation,omitempty"`
	// Summary is the observation's summary, or for a step that ended the
	// run, the decision's message or reason.
	Summary     string    `json:"summary,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	DecodeError string    `json:"decode_error,omitempty"`
}

// SummarizeStep makes the summary of a step.
func SummarizeStep(st agentrt.Step) StepSummary {
	s := StepSummary{
		Index:       st.Index,
		ID:          st.ID,
		Status:      agentrt.StepStatus(BoundString(string(st.Status))),
		StartedAt:   st.StartedAt,
		FinishedAt:  st.FinishedAt,
		DecodeError: BoundString(st.DecodeError),
	}
	if d := st.Decision; d != nil {
		s.Decision = agentrt.DecisionKind(BoundString(string(d.Kind)))
		s.Tool = BoundString(d.Tool)
		s.CallID = BoundString(d.CallID)
		s.Args = BoundRaw(d.Args)
		switch {
		case d.Message != "":
			s.Summary = d.Message
		case d.Kind != agentrt.KindToolCall:
			s.Summary = d.Reason
		}
	}
	if p := st.Policy; p != nil {
		s.Policy = agentrt.PolicyOutcome(BoundString(string(p.Outcome)))
	}
	if o := st.Observation; o != nil {
		s.Observation = agentrt.ObservationKind(BoundString(string(o.Kind)))
		if o.Summary != "" {
			s.Summary = o.Summary
		}
	}
	s.Summary = BoundString(s.Summary)
	return s
}

// RunDetailPage is one page of a run: its steps from an offset, its pending
// approvals (always from the first, so a waiting request is on every page),
// and its approvals of every status from the offset, each with its total.
// Pending holds approvals only while the run is waiting: one left pending
// on a run that ended cannot be decided, and is listed in Approvals only.
//
// Approvals are as the page read returned them, every column capped at
// agentrt.MaxPageText but not bounded further, so that a text surface can
// print each field's own size beside its head and tail. Call Bounded before
// encoding a page. To decide an approval, read it whole with
// PendingApproval.
type RunDetailPage struct {
	Run            RunSummary         `json:"run"`
	Steps          []StepSummary      `json:"steps"`
	StepsTotal     int                `json:"steps_total"`
	Pending        []agentrt.Approval `json:"pending"`
	PendingTotal   int                `json:"pending_total"`
	Approvals      []agentrt.Approval `json:"approvals"`
	ApprovalsTotal int                `json:"approvals_total"`
	// Waiting is the run's only pending approval, when it has exactly one.
	Waiting *agentrt.Approval `json:"waiting_approval,omitempty"`
}

// DetailPage reads one page of a run: at most limit steps and approvals from
// offset, and at most limit pending approvals. A missing run is
// agentrt.ErrNotFound.
func DetailPage(ctx context.Context, store agentrt.StoreReader, runID string, limit, offset int) (RunDetailPage, error) {
	r, err := store.GetRunCapped(ctx, runID)
	if err != nil {
		return RunDetailPage{}, err
	}
	var p RunDetailPage
	steps, total, err := store.ListStepsPage(ctx, runID, limit, offset)
	if err != nil {
		return RunDetailPage{}, err
	}
	p.StepsTotal = total
	p.Steps = make([]StepSummary, 0, len(steps))
	for _, st := range steps {
		p.Steps = append(p.Steps, SummarizeStep(st))
	}
	if r.Status == agentrt.RunWaiting {
		pending, total, err := store.ListApprovalsPage(ctx, runID, agentrt.ApprovalPending, limit, 0)
		if err != nil {
			return RunDetailPage{}, err
		}
		p.PendingTotal = total
		p.Pending = pending
	}
	all, total, err := store.ListApprovalsPage(ctx, runID, "", limit, offset)
	if err != nil {
		return RunDetailPage{}, err
	}
	p.ApprovalsTotal = total
	p.Approvals = all
	pendingID := ""
	if r.Status == agentrt.RunWaiting && p.PendingTotal == 1 && len(p.Pending) == 1 {
		w := p.Pending[0]
		p.Waiting = &w
		pendingID = w.ID
	}
	p.Run = summarize(r, pendingID)
	if err := redactStepArgs(ctx, store, runID, &p); err != nil {
		return RunDetailPage{}, err
	}
	return p, nil
}

// redactStepArgs shows each step's arguments as its approval shows them
// (agentrt.ApprovalArguments): a step held for approval because its
// arguments carry a secret does not put the value back beside the
// redacted approval. An approval not on the page is looked for a page at
// a time. A step no approval judged shows its arguments as recorded.
func redactStepArgs(ctx context.Context, store agentrt.StoreReader, runID string, p *RunDetailPage) error {
	need := map[string]int{} // step id -> index in p.Steps
	for i, s := range p.Steps {
		if s.Policy == agentrt.RequireApproval && len(s.Args) > 0 {
			need[s.ID] = i
		}
	}
	apply := func(as []agentrt.Approval) {
		for _, a := range as {
			i, ok := need[a.StepID]
			if !ok {
				continue
			}
			if args, secrets := agentrt.ApprovalArguments(a); len(secrets) > 0 {
				p.Steps[i].Args = BoundRaw(args)
			}
			delete(need, a.StepID)
		}
	}
	apply(p.Pending)
	apply(p.Approvals)
	for offset := 0; len(need) > 0; {
		page, total, err := store.ListApprovalsPage(ctx, runID, "", pageOfApprovals, offset)
		if err != nil {
			return err
		}
		apply(page)
		if offset += len(page); len(page) == 0 || offset >= total {
			break
		}
	}
	return nil
}

// pageOfApprovals is how many approvals redactStepArgs reads at a time.
const pageOfApprovals = 200

// Bounded returns p with every approval in it bounded by BoundApproval.
func (p RunDetailPage) Bounded() RunDetailPage {
	p.Pending = boundAll(p.Pending)
	p.Approvals = boundAll(p.Approvals)
	if p.Waiting != nil {
		w := BoundApproval(*p.Waiting)
		p.Waiting = &w
	}
	return p
}

func boundAll(as []agentrt.Approval) []agentrt.Approval {
	out := make([]agentrt.Approval, len(as))
	for i, a := range as {
		out[i] = BoundApproval(a)
	}
	return out
}
