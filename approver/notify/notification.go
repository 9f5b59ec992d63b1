package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

// Type is what happened to the approval.
type Type string

// The notification types.
const (
	// Requested: the approval started waiting.
	Requested Type = "approval.requested"
	// Approved: a person granted it; the run waits for Resume.
	Approved Type = "approval.approved"
	// Rejected: a person refused it; the run was cancelled.
	Rejected Type = "approval.rejected"
	// Expired: nobody decided before its TTL; the run was cancelled. Never
	// a rejection.
	Expired Type = "approval.expired"
	// Cancelled: its run was cancelled while it waited.
	Cancelled Type = "approval.cancelled"
	// Voted: an approver voted on an approval with stages; it may still
	// be pending.
	Voted Type = "approval.voted"
)

// MaxSummary bounds Notification.Summary, in bytes.
const MaxSummary = 512

// Notification is the body of one POST.
type Notification struct {
	// ID is the event's seq in decimal: the same on every delivery of
	// this event, so a receiver drops a repeat by it.
	ID         string    `json:"id"`
	Type       Type      `json:"type"`
	At         time.Time `json:"at"`
	RunID      string    `json:"run_id"`
	ApprovalID string    `json:"approval_id"`
	Kind       string    `json:"kind"`
	Tool       string    `json:"tool"`
	Hash       string    `json:"hash"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	// By is who decided or cancelled, bounded; empty for a request and an
	// expiry.
	By string `json:"by,omitempty"`
	// Summary is one line for a person, bounded and escaped with
	// trace.Sanitize.
	Summary string `json:"summary"`
	// Arguments are the tool call's arguments, bounded; only with
	// Config.IncludeArguments.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// MayVote, for an approval with stages still pending (requested or
	// voted), names the approvers who may vote in its open stage now: the
	// people to notify. Empty otherwise.
	MayVote []string `json:"may_vote,omitempty"`
}

// summary escapes s and cuts it to MaxSummary bytes on a rune boundary.
func summary(s string) string {
	s = trace.Sanitize(s)
	if len(s) <= MaxSummary {
		return s
	}
	i := MaxSummary - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// build makes the notification for e, or reports false for an event that
// is not about an approval's waiting.
func build(ctx context.Context, st agentrt.StoreReader, e agentrt.Event, args bool) (Notification, bool, error) {
	// What the two approval events say that a notification uses.
	var p struct {
		ApprovalID, Status, By, Note, Reason, Hash string
	}
	var typ Type
	v, err := agentrt.DecodePayload(e)
	switch q := v.(type) {
	case agentrt.ApprovalRequestedPayload:
		typ = Requested
		p.ApprovalID, p.Reason, p.Hash = q.ApprovalID, q.Reason, q.Hash
	case agentrt.ApprovalDecidedPayload:
		p.ApprovalID, p.Status, p.By, p.Note = q.ApprovalID, string(q.Status), q.By, q.Note
	case agentrt.ApprovalVotedPayload:
		typ = Voted
		p.ApprovalID, p.Status, p.By, p.Note = q.ApprovalID, q.Decision, q.By, q.Note
	default:
		if e.Type != agentrt.EventApprovalRequest && e.Type != agentrt.EventApprovalDecided && e.Type != agentrt.EventApprovalVoted {
			return Notification{}, false, nil
		}
	}
	if err != nil || p.ApprovalID == "" {
		// A payload the runtime did not write (or a stand-in for one too
		// big to read) says nothing to notify about.
		return Notification{}, false, nil
	}
	if typ == "" {
		switch agentrt.ApprovalStatus(p.Status) {
		case agentrt.ApprovalApproved:
			typ = Approved
		case agentrt.ApprovalRejected:
			typ = Rejected
		case agentrt.ApprovalExpired:
			typ = Expired
		case agentrt.ApprovalCancelled:
			typ = Cancelled
		default:
			return Notification{}, false, nil
		}
	}
	a, err := st.GetApproval(ctx, e.RunID, p.ApprovalID)
	if err != nil {
		return Notification{}, false, fmt.Errorf("notify: approval %s of event %d: %w", p.ApprovalID, e.Seq, err)
	}
	n := Notification{ID: strconv.FormatInt(e.Seq, 10), Type: typ, At: e.At.UTC(), RunID: e.RunID, ApprovalID: a.ID,
		Kind: view.BoundString(a.Kind), Tool: view.BoundString(a.Request.Spec.Name), Hash: a.Hash, ExpiresAt: a.ExpiresAt,
		By: view.BoundString(p.By)}
	if typ == Requested && p.Hash != "" {
		n.Hash = p.Hash // what was asked, even if the row has changed since
	}
	tool := view.BoundString(a.Request.Spec.Name)
	note := ""
	if p.Note != "" {
		note = ": " + view.BoundString(p.Note)
	}
	switch typ {
	case Requested:
		n.Summary = summary(fmt.Sprintf("%s (%s) needs approval: %s", tool, n.Kind, view.BoundString(p.Reason)))
	case Approved:
		n.Summary = summary(fmt.Sprintf("%s approved by %s%s", tool, n.By, note))
	case Rejected:
		n.Summary = summary(fmt.Sprintf("%s rejected by %s%s", tool, n.By, note))
	case Expired:
		n.Summary = summary(fmt.Sprintf("%s expired undecided at %s", tool, a.ExpiresAt.UTC().Format(time.RFC3339)))
	case Cancelled:
		n.Summary = summary(fmt.Sprintf("%s cancelled with its run by %s%s", tool, n.By, note))
	case Voted:
		n.Summary = summary(fmt.Sprintf("%s: %s voted %s%s", tool, n.By, p.Status, note))
	}
	if typ == Requested || typ == Voted {
		if n.MayVote, err = mayVote(ctx, st, a); err != nil {
			return Notification{}, false, fmt.Errorf("notify: approval %s of event %d: %w", p.ApprovalID, e.Seq, err)
		}
	}
	if args {
		shown, _ := agentrt.ApprovalArguments(a) // secrets the policy found shown as [REDACTED:<kind>]
		n.Arguments = view.BoundRaw(shown)
	}
	return n, true, nil
}

// mayVote names, bounded, the approvers who may vote in the open stage of
// a pending approval with a requirement; nil for any other.
func mayVote(ctx context.Context, st agentrt.StoreReader, a agentrt.Approval) ([]string, error) {
	if a.Status != agentrt.ApprovalPending || a.Requirement == nil {
		return nil, nil
	}
	stages, err := agentrt.ApprovalStages(ctx, st, a)
	if err != nil {
		return nil, err
	}
	for _, s := range stages {
		if s.Met {
			continue
		}
		var out []string
		for _, name := range s.Open {
			out = append(out, view.BoundString(name))
		}
		return out, nil
	}
	return nil, nil
}
