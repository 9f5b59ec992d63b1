package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/proxy/internal/config"
	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/proxy/internal/reply"

	agentrt "github.com/agentrt/agentrt"
)

// What the model is told is proxy/internal/reply; these are its names
// as the proxy's API gives them.

// Status is the word a proxied call's answer starts with.
type Status = reply.Status

// The statuses the model can be told; reply's constants say what each
// means. A result that ran and was recorded carries no status word.
const (
	StatusPendingApproval = reply.StatusPendingApproval
	StatusInProgress      = reply.StatusInProgress
	StatusDenied          = reply.StatusDenied
	StatusInvalid         = reply.StatusInvalid
	StatusRejected        = reply.StatusRejected
	StatusExpired         = reply.StatusExpired
	StatusDuplicate       = reply.StatusDuplicate
	StatusBlocked         = reply.StatusBlocked
	StatusUnknownOutcome  = reply.StatusUnknownOutcome
	StatusFailed          = reply.StatusFailed
	StatusUnrecorded      = reply.StatusUnrecorded
	StatusUnavailable     = reply.StatusUnavailable
	StatusGateStatus      = reply.StatusGateStatus
)

// StatusMetaKey is the _meta key that marks the proxy's own answers; its
// value's "status" is the answer's status word. A host tells the proxy's
// answers from a server's by this key, never by the text.
const StatusMetaKey = reply.StatusMetaKey

// answer is what one call returns to the host.
type answer = reply.Answer

// The status tool reports; it never executes, collects, expires or writes
// anything.
const (
	statusDescription = "Reports what became of this session's tool calls in the last hour: which wait for an operator's approval, which ran, which were refused and why. It runs nothing and decides nothing."
	statusSchema      = `{"type":"object","properties":{"approval_id":{"type":"string","maxLength":128,"description":"report only the call waiting on this approval"}},"additionalProperties":false}`
	// StatusWindow is how far back the status tool reports.
	StatusWindow = time.Hour
	// StatusLimit is the most calls it reports.
	StatusLimit = 200
)

func (p *Proxy) status(ctx context.Context, raw json.RawMessage) answer {
	var in struct {
		ApprovalID string `json:"approval_id"`
	}
	if len(raw) > 0 {
		if err := config.DecodeStrict(raw, &in); err != nil {
			return reply.Invalid("the status tool takes only an optional approval_id string")
		}
	}
	// Rows queued for writing (allowed reads) are committed first, so the
	// report includes every call this proxy answered.
	if err := p.ix.Update(ctx, func(*index.Tx) error { return nil }); err != nil {
		a, _ := p.internal(err, "the record could not be read")
		return a
	}
	now := p.now()
	rows, err := p.ix.Recent(ctx, p.cfg.Session, now.Add(-StatusWindow), StatusLimit)
	if err != nil {
		a, _ := p.internal(err, "the record could not be read")
		return a
	}
	var b strings.Builder
	shown := 0
	for _, r := range rows {
		if in.ApprovalID != "" && r.ApprovalID != in.ApprovalID {
			continue
		}
		shown++
		fmt.Fprintf(&b, "\n- %s %s, %s ago: %s", reply.Quote(r.Tool, reply.BoundName), p.argsOf(ctx, r), now.Sub(r.CreatedAt).Round(time.Second), p.describe(ctx, r, now))
	}
	head := fmt.Sprintf("%d call(s) in the last hour", shown)
	if in.ApprovalID != "" {
		head = fmt.Sprintf("%d call(s) in the last hour wait or waited on approval %s", shown, reply.Quote(in.ApprovalID, reply.BoundName))
	}
	if len(rows) == StatusLimit {
		head += fmt.Sprintf(" (only the newest %d are read)", StatusLimit)
	}
	return answer{Status: StatusGateStatus, Text: string(StatusGateStatus) + ": " + head + "." + b.String()}
}

// argsOf quotes a call's recorded arguments, bounded.
func (p *Proxy) argsOf(ctx context.Context, r *index.Row) string {
	steps, _, err := p.store.ListStepsPage(ctx, r.RunID, 1, 0)
	if err != nil || len(steps) == 0 || steps[0].Decision == nil {
		return "(arguments not recorded)"
	}
	d := steps[0].Decision
	if d.InvalidArgs != "" {
		return "(arguments that were not acceptable JSON)"
	}
	return "with " + reply.Quote(string(d.Args), 200)
}

// describe says where a call is, reading the store and writing nothing.
func (p *Proxy) describe(ctx context.Context, r *index.Row, now time.Time) string {
	switch r.State {
	case index.StateBegun:
		run, err := p.store.GetRun(ctx, r.RunID)
		switch {
		case err != nil:
			return "starting"
		case run.Status == agentrt.RunRunning:
			return "IN PROGRESS"
		case run.Status == agentrt.RunWaiting:
			return "PENDING an operator's approval"
		}
		return "ended; call again to learn its outcome"
	case index.StateWaiting:
		a, err := p.store.GetApproval(ctx, r.RunID, r.ApprovalID)
		if err != nil {
			return "waiting on approval " + reply.Quote(r.ApprovalID, reply.BoundName)
		}
		unknown := a.Kind == agentrt.InterruptedSideEffect
		switch {
		case a.Status == agentrt.ApprovalPending && (a.ExpiresAt.IsZero() || now.Before(a.ExpiresAt)):
			if unknown {
				return fmt.Sprintf("OUTCOME UNKNOWN: it may have taken effect; an operator decides whether it runs again (approval %s); the tool is blocked meanwhile", reply.Quote(a.ID, reply.BoundName))
			}
			return fmt.Sprintf("PENDING approval %s; it has not run", reply.Quote(a.ID, reply.BoundName))
		case a.Status == agentrt.ApprovalApproved:
			return fmt.Sprintf("APPROVED (approval %s), awaiting collection: calling again with exactly the same arguments runs it", reply.Quote(a.ID, reply.BoundName))
		case a.Status == agentrt.ApprovalRejected:
			return "REJECTED by an operator; it did not run"
		}
		if unknown {
			return "OUTCOME UNKNOWN: its question expired and is asked again at the next call"
		}
		return "EXPIRED: no operator decided in time; it did not run"
	}
	if d, hidden := p.erasedDetail(ctx, r); hidden {
		return d
	}
	switch r.Outcome {
	case OutcomeSucceeded:
		return "executed: succeeded"
	case OutcomeFailed:
		return "executed: the server reported a failure: " + reply.Quote(r.Detail, 300)
	case OutcomeUnrecorded:
		return "executed: its result could not be recorded"
	case OutcomeUnknown:
		return "OUTCOME UNKNOWN: it may have taken effect; an operator was asked about running it again"
	case OutcomeUnknownRejected:
		return "OUTCOME UNKNOWN: an operator rejected running it again; it was not run again"
	case OutcomeUnknownDenied:
		return "OUTCOME UNKNOWN: the policy does not allow running it again"
	case OutcomeDenied:
		return "not executed: refused (" + reply.Quote(r.Detail, 300) + ")"
	case OutcomeInvalid:
		return "not executed: invalid arguments"
	case OutcomeRejected:
		return "not executed: REJECTED by an operator"
	case OutcomeExpired:
		return "not executed: EXPIRED"
	}
	return "not executed"
}

// erasedDetail describes a failed or refused call whose run was erased
// since the index was last swept (the row keeps its text until the
// proxy's next start), without the text; it leaves the text out too when
// it cannot tell.
func (p *Proxy) erasedDetail(ctx context.Context, r *index.Row) (string, bool) {
	if r.Detail == "" || (r.Outcome != OutcomeFailed && r.Outcome != OutcomeDenied) {
		return "", false
	}
	gone, err := runErased(ctx, p.store, r.RunID)
	why := "was erased"
	switch {
	case err != nil:
		why = "is not shown: the record could not be read"
	case !gone:
		return "", false
	}
	if r.Outcome == OutcomeFailed {
		return "executed: the server reported a failure (its text " + why + ")", true
	}
	return "not executed: refused (the reason " + why + ")", true
}
