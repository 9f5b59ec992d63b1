package webhook

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/internal/httpguard"
)

// Code names why a request was refused, in the "code" of an error body.
type Code string

// The codes, by status.
const (
	// 400: the body is not a decision or cancel, names another run or
	// approval than the path, or lacks the hash or who decided.
	CodeBadRequest Code = "bad_request"
	// 401: unsigned, badly signed, outside the skew, or replayed.
	CodeUnauthorized Code = "unauthorized"
	// 404: no such route, run or approval of this run.
	CodeNotFound Code = "not_found"
	// 409: the stored approval is not the one shown.
	CodeApprovalChanged Code = "approval_changed"
	// 409: the approval was already decided or cancelled.
	CodeNotPending Code = "not_pending"
	// 409: the run is not waiting for an approval.
	CodeRunNotWaiting Code = "run_not_waiting"
	// 409: a cancel of a run that already ended.
	CodeRunFinished Code = "run_finished"
	// 409: the stored approval does not match its own hash.
	CodeApprovalHash Code = "approval_hash"
	// 403: the decider may not decide this approval: its scope, its
	// roles, or being the run's requester. Nothing was decided.
	CodeOutOfScope Code = "out_of_scope"
	// 409: the approver voted on this approval already, or its stage is
	// met or not yet open. Nothing was recorded.
	CodeVoteRefused Code = "vote_refused"
	// 410: the approval expired; never a rejection.
	CodeExpired Code = "expired"
	// 413: the body is over Config.MaxBody.
	CodeBodyTooLarge Code = "body_too_large"
	// 429: over Config.Rate, or the replay window is full.
	CodeRateLimited Code = "rate_limited"
	// 500: the store failed; the detail goes to the Observer only.
	CodeInternal Code = "internal"
)

// Error is the body of every refusal.
type Error struct {
	Error string `json:"error"`
	Code  Code   `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(Error{Error: "internal error", Code: CodeInternal})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// refuse answers with an error body and reports the refusal; detail, when
// set, goes to the Observer and never to the caller.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, code Code, msg string, detail error) {
	p := map[string]any{"status": status, "code": code, "method": r.Method, "path": r.URL.Path}
	if detail != nil {
		p["detail"] = detail.Error()
	}
	h.observe(EventRefused, "", p)
	httpguard.Refusing(w)
	writeJSON(w, status, Error{Error: msg, Code: code})
}

// refusals map an Approver's errors to their status, code and message, the
// first match winning. The messages are the handler's own, so nothing of
// the store's text reaches the caller; detail sends the error to the
// Observer, and a cancelOnly row answers only a refused cancel.
var refusals = []struct {
	err        error
	status     int
	code       Code
	msg        string
	detail     bool
	cancelOnly bool
}{
	{approver.ErrDecision, http.StatusBadRequest, CodeBadRequest, "the decision is incomplete", true, false},
	{agentrt.ErrNotFound, http.StatusNotFound, CodeNotFound, "not found", false, false},
	{agentrt.ErrApprovalExpired, http.StatusGone, CodeExpired, "the approval has expired", false, false},
	{agentrt.ErrNotPending, http.StatusConflict, CodeNotPending, "the approval is no longer pending", false, false},
	{agentrt.ErrApprovalChanged, http.StatusConflict, CodeApprovalChanged, "the approval is not the one shown; show it again", false, false},
	{agentrt.ErrApprovalHash, http.StatusConflict, CodeApprovalHash, "the stored approval does not match its hash", true, false},
	{agentrt.ErrOutOfScope, http.StatusForbidden, CodeOutOfScope, "the approver may not decide this approval; nothing was decided", true, false},
	{agentrt.ErrAlreadyVoted, http.StatusConflict, CodeVoteRefused, voteRefused, true, false},
	{agentrt.ErrStageClosed, http.StatusConflict, CodeVoteRefused, voteRefused, true, false},
	{agentrt.ErrRunState, http.StatusConflict, CodeRunFinished, "the run has already ended", false, true},
	{agentrt.ErrRunState, http.StatusConflict, CodeRunNotWaiting, "the run is not waiting for an approval", false, false},
}

const voteRefused = "the vote was refused: already cast, or its stage is not open; nothing was recorded"

// fail answers err with its row of refusals (cancel: the request was a
// cancel); an error no row names is a 500 whose detail goes to the
// Observer only.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error, cancel bool) {
	for _, f := range refusals {
		if errors.Is(err, f.err) && (cancel || !f.cancelOnly) {
			var detail error
			if f.detail {
				detail = err
			}
			h.refuse(w, r, f.status, f.code, f.msg, detail)
			return
		}
	}
	h.refuse(w, r, http.StatusInternalServerError, CodeInternal, "internal error", err)
}
