package view

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentrt/agentrt"
)

// RunSummary is one run as an operator surface lists it. Text fields are
// bounded by BoundString.
type RunSummary struct {
	ID           string                 `json:"id"`
	Goal         string                 `json:"goal"`
	Status       agentrt.RunStatus      `json:"status"`
	Reason       agentrt.TerminalReason `json:"reason,omitempty"`
	ReasonDetail string                 `json:"reason_detail,omitempty"`
	Steps        int                    `json:"steps"`
	CreatedAt    time.Time              `json:"created_at"`
	FinishedAt   time.Time              `json:"finished_at,omitzero"`
	// PendingApprovalID is set only for a waiting run with exactly one
	// pending approval: the one an operator means without naming one.
	PendingApprovalID string          `json:"pending_approval_id,omitempty"`
	ModelCalls        int             `json:"model_calls"`
	Usage             agentrt.Usage   `json:"usage,omitzero"`
	EstimatedCost     agentrt.Micros  `json:"estimated_cost_micros"`
	Result            json.RawMessage `json:"result,omitempty"`
	DecodeError       string          `json:"decode_error,omitempty"`
}

// summarize makes the summary of a run read by a page read.
func summarize(r agentrt.Run, pendingID string) RunSummary {
	return RunSummary{
		ID:                r.ID,
		Goal:              BoundString(r.Goal),
		Status:            agentrt.RunStatus(BoundString(string(r.Status))),
		Reason:            agentrt.TerminalReason(BoundString(string(r.Reason))),
		ReasonDetail:      BoundString(r.ReasonDetail),
		Steps:             r.StepCount,
		CreatedAt:         r.CreatedAt,
		FinishedAt:        r.FinishedAt,
		PendingApprovalID: pendingID,
		ModelCalls:        r.ModelCalls,
		Usage:             r.Usage,
		EstimatedCost:     r.EstimatedCost,
		Result:            BoundRaw(r.Result),
		DecodeError:       BoundString(r.DecodeError),
	}
}

// soleOnePending returns the id of a waiting run's only pending approval,
// or "" when it has none or several. Two rows are enough to tell one from
// several.
func soleOnePending(ctx context.Context, store agentrt.StoreReader, r agentrt.Run) (string, error) {
	if r.Status != agentrt.RunWaiting {
		return "", nil
	}
	page, total, err := store.ListApprovalsPage(ctx, r.ID, agentrt.ApprovalPending, 2, 0)
	if err != nil {
		return "", err
	}
	if total != 1 || len(page) != 1 {
		return "", nil
	}
	return page[0].ID, nil
}

// RunsPage reads one page of runs, newest first, and the number of runs in
// the store. Every read is bounded by the page: the runs, then for each
// waiting run at most two of its pending approvals.
func RunsPage(ctx context.Context, store agentrt.StoreReader, limit, offset int) ([]RunSummary, int, error) {
	return RunsByStatusPage(ctx, store, "", limit, offset)
}

// RunsByStatusPage is RunsPage of the runs in one status ("" is every run).
func RunsByStatusPage(ctx context.Context, store agentrt.StoreReader, status agentrt.RunStatus, limit, offset int) ([]RunSummary, int, error) {
	runs, total, err := store.ListRunsByStatusPage(ctx, status, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]RunSummary, 0, len(runs))
	for _, r := range runs {
		id, err := soleOnePending(ctx, store, r)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, summarize(r, id))
	}
	return out, total, nil
}

// Summary reads one run, its text columns capped. A missing run is
// agentrt.ErrNotFound.
func Summary(ctx context.Context, store agentrt.StoreReader, runID string) (RunSummary, error) {
	r, err := store.GetRunCapped(ctx, runID)
	if err != nil {
		return RunSummary{}, err
	}
	id, err := soleOnePending(ctx, store, r)
	if err != nil {
		return RunSummary{}, err
	}
	return summarize(r, id), nil
}
