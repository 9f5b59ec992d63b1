package console

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

// A run's page draws each step as one card of four stages, in the order
// the engine takes them: what the model decided, what the policy said,
// who approved (when the policy asked), and what the tool returned. The
// chain's own record of the step, its events' JSON, sits behind a
// details toggle on the card, closed until asked for.

// Tones colour a stage, a badge or a card: each is a class, with its rules
// in app.css.
const (
	toneOK   = "tone-ok"   // went ahead: allowed, approved, a result
	toneWait = "tone-wait" // waits on a person or is still under way
	toneDeny = "tone-deny" // refused by a policy or a person
	toneFail = "tone-fail" // failed or ended the run
	toneNone = "tone-none" // the stage did not happen for this step
)

// maxStepEvents bounds the events one card reads for its raw record: a
// step writes about ten, and a card that reaches the bound says so.
const maxStepEvents = 64

// stage is one stage of a step: a badge naming what happened, its tone,
// and the reason or summary that goes with it.
type stage struct {
	Badge string
	Tone  string
	Note  Text
}

// approvalMark is one approval of a step as the chain recorded it.
type approvalMark struct {
	ID, Status, Tone string
	By               Text
	At               time.Time
	Signed, Decided  bool
}

// blockLine is one typed block of a tool result; Size is the decoded
// bytes the source sent.
type blockLine struct {
	Type, Media, URI string
	Size             int
	Cut              bool
}

// stepCard is one step of the timeline.
type stepCard struct {
	Index        int
	ID, Tool     string
	CallID       string // the caller's id for the call (Decision.CallID)
	Status, Tone string
	Started      time.Time
	Decision     stage
	Args         []field
	Verdict      stage
	Approvals    []approvalMark
	ApprovalTone string
	Outcome      stage
	Blocks       []blockLine
	Events       []timelineEntry
	EventsCut    bool
}

// stepCards reads the chain's events of each step and makes its card.
func (h *Handler) stepCards(ctx context.Context, runID string, steps []agentrt.Step) ([]stepCard, error) {
	cards := make([]stepCard, 0, len(steps))
	for _, st := range steps {
		evs, err := h.cfg.Store.ListStepEvents(ctx, runID, st.ID, 0, maxStepEvents)
		if err != nil {
			return nil, err
		}
		cards = append(cards, makeCard(st, evs))
	}
	return cards, nil
}

func makeCard(st agentrt.Step, evs []agentrt.Event) stepCard {
	c := stepCard{Index: st.Index, ID: st.ID, Status: trace.Sanitize(string(st.Status)), Tone: stepTone(st.Status),
		Started: st.StartedAt, EventsCut: len(evs) == maxStepEvents}
	c.Decision, c.Verdict, c.Outcome = stage{Tone: toneNone}, stage{Tone: toneNone}, stage{Tone: toneNone}
	if d := st.Decision; d != nil {
		c.Tool, c.CallID = trace.Sanitize(d.Tool), trace.Sanitize(d.CallID)
		c.Decision = stage{Badge: trace.Sanitize(string(d.Kind)), Tone: decisionTone(d.Kind), Note: show(firstOf(d.Message, d.Reason))}
		switch {
		case d.InvalidArgs != "":
			c.Args = []field{{Name: "invalid arguments", Text: show(d.InvalidArgs), Size: view.ValueSize(json.RawMessage(d.InvalidArgs))}}
		case len(d.Args) > 0 && string(d.Args) != "{}":
			c.Args = jsonFields("arguments", d.Args)
		}
	}
	if p := st.Policy; p != nil {
		c.Verdict = stage{Badge: trace.Sanitize(string(p.Outcome)), Tone: verdictTone(p.Outcome), Note: show(p.Reason)}
	}
	if o := st.Observation; o != nil {
		c.Outcome = stage{Badge: trace.Sanitize(string(o.Kind)), Tone: outcomeTone(o.Kind), Note: show(firstOf(o.Summary, o.FailureMessage))}
		for _, b := range o.Blocks {
			c.Blocks = append(c.Blocks, blockLine{Type: trace.Sanitize(string(b.Type)), Media: trace.Sanitize(b.MIMEType),
				URI: trace.Sanitize(b.URI), Size: int(b.Size), Cut: b.Truncated})
		}
	} else if stepTone(st.Status) == toneWait {
		c.Outcome = stage{Badge: "not yet", Tone: toneWait}
	}
	for _, e := range evs {
		c.Events = append(c.Events, timelineEntry{Seq: e.Seq, At: e.At, Type: trace.Sanitize(string(e.Type)), Detail: show(string(e.Payload))})
	}
	c.Approvals, c.ApprovalTone = approvalMarks(evs), toneNone
	if len(c.Approvals) > 0 {
		c.ApprovalTone = c.Approvals[len(c.Approvals)-1].Tone
	}
	return c
}

// approvalMarks follows the approvals of a step through its events: each
// request, then its decision when one was recorded.
func approvalMarks(evs []agentrt.Event) []approvalMark {
	var marks []approvalMark
	at := map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case agentrt.EventApprovalRequest:
			p, err := agentrt.PayloadAs[agentrt.ApprovalRequestedPayload](e)
			if err != nil {
				continue
			}
			at[p.ApprovalID] = len(marks)
			marks = append(marks, approvalMark{ID: p.ApprovalID, Status: string(agentrt.ApprovalPending), Tone: toneWait, At: e.At})
		case agentrt.EventApprovalDecided:
			p, err := agentrt.PayloadAs[agentrt.ApprovalDecidedPayload](e)
			if err != nil {
				continue
			}
			i, ok := at[p.ApprovalID]
			if !ok {
				at[p.ApprovalID], i = len(marks), len(marks)
				marks = append(marks, approvalMark{ID: p.ApprovalID})
			}
			marks[i].Status, marks[i].Tone = trace.Sanitize(string(p.Status)), approvalTone(p.Status)
			marks[i].By, marks[i].At, marks[i].Decided = show(p.By), e.At, true
			marks[i].Signed = p.ApproverID != "" // an enrolled approver's decision is signed
		}
	}
	return marks
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Tones of the badges: each status, kind or outcome names its tone, and
// one not named takes the tone toneOf is given.
var (
	stepTones     = map[agentrt.StepStatus]string{agentrt.StepDone: toneOK, agentrt.StepFailed: toneFail, agentrt.StepInterrupted: toneFail}
	decisionTones = map[agentrt.DecisionKind]string{agentrt.KindToolCall: toneOK, agentrt.KindComplete: toneOK}
	verdictTones  = map[agentrt.PolicyOutcome]string{agentrt.Allow: toneOK, agentrt.RequireApproval: toneWait, agentrt.Deny: toneDeny}
	outcomeTones  = map[agentrt.ObservationKind]string{agentrt.ObsToolResult: toneOK, agentrt.ObsPolicyDenied: toneDeny, agentrt.ObsInterrupted: toneWait}
	approvalTones = map[agentrt.ApprovalStatus]string{agentrt.ApprovalApproved: toneOK, agentrt.ApprovalPending: toneWait}
	runTones      = map[agentrt.RunStatus]string{agentrt.RunCompleted: toneOK, agentrt.RunFailed: toneFail, agentrt.RunCancelled: toneDeny}
)

// toneOf is the tone tones names for k, else otherwise.
func toneOf[K comparable](tones map[K]string, k K, otherwise string) string {
	if t, ok := tones[k]; ok {
		return t
	}
	return otherwise
}

func stepTone(s agentrt.StepStatus) string         { return toneOf(stepTones, s, toneWait) }
func decisionTone(k agentrt.DecisionKind) string   { return toneOf(decisionTones, k, toneFail) }
func verdictTone(o agentrt.PolicyOutcome) string   { return toneOf(verdictTones, o, toneFail) }
func outcomeTone(k agentrt.ObservationKind) string { return toneOf(outcomeTones, k, toneFail) }
func approvalTone(s agentrt.ApprovalStatus) string { return toneOf(approvalTones, s, toneDeny) }

// runTone is the tone of a run's status badge.
func runTone(s agentrt.RunStatus) string { return toneOf(runTones, s, toneWait) }

// usage is a budget's use of its cost ceiling in the current window, for
// the meter the budgets page draws.
type usage struct {
	Used, Max, Low, High agentrt.Micros
	Percent              int
}

func newUsage(used, ceiling agentrt.Micros) *usage {
	if ceiling <= 0 {
		return nil
	}
	// Rounded to the nearest percent, and never 0% for a window that has
	// spent something.
	pct := int(min(100, max(0, (used*100+ceiling/2)/ceiling)))
	if pct == 0 && used > 0 {
		pct = 1
	}
	// The meter turns amber past three quarters and red past nine tenths.
	return &usage{Used: used, Max: ceiling, Low: ceiling / 4 * 3, High: ceiling / 10 * 9, Percent: pct}
}

// byteCount prints a size in bytes, as every page prints one; the sizes
// of values come from view.ValueSize, as the CLI's do.
func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
