// Package reply is what agentrt-proxy tells the model: the status word an
// answer starts with, the proxy's own answer texts, a recorded result
// passed back as the server sent it (its typed blocks as MCP content), and
// the escaping of text a server, the model or an operator chose. It never
// names agentrt, the database, the configuration, a path or a run id.
//
// Package proxy gives Status, its words and StatusMetaKey under its own
// names.
package reply

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/index"
	"github.com/agentrt/agentrt/trace"
)

// Status is the word a proxied call's answer starts with.
type Status string

// The statuses the model can be told. A result that ran and was recorded
// carries no status word: it is the server's answer, as data.
const (
	// StatusPendingApproval: the call waits for an operator; it has not run.
	StatusPendingApproval Status = "PENDING_APPROVAL"
	// StatusInProgress: an identical call is running now.
	StatusInProgress Status = "IN_PROGRESS"
	// StatusDenied: the policy (or the operator's rules) refuses it; it did not run.
	StatusDenied Status = "DENIED"
	// StatusInvalid: the arguments were refused; it did not run.
	StatusInvalid Status = "INVALID"
	// StatusRejected: an operator rejected this exact request.
	StatusRejected Status = "REJECTED"
	// StatusExpired: no operator decided in time; it did not run.
	StatusExpired Status = "EXPIRED"
	// StatusDuplicate: this exact call already ran within the repeat window.
	StatusDuplicate Status = "DUPLICATE"
	// StatusBlocked: refused without asking: the tool is blocked by an
	// unknown outcome, or too many approvals are open.
	StatusBlocked Status = "BLOCKED"
	// StatusUnknownOutcome: an identical call may or may not have taken
	// effect; it runs again only if an operator approves.
	StatusUnknownOutcome Status = "UNKNOWN_OUTCOME"
	// StatusFailed: it ran and the server reported a failure.
	StatusFailed Status = "FAILED"
	// StatusUnrecorded: it ran, but its result could not be recorded.
	StatusUnrecorded Status = "UNRECORDED"
	// StatusUnavailable: the proxy could not handle the call now; it did
	// not run.
	StatusUnavailable Status = "UNAVAILABLE"
	// StatusGateStatus starts the status tool's answers.
	StatusGateStatus Status = "GATE_STATUS"
)

// IsError says which statuses are errors to the host.
func (s Status) IsError() bool {
	switch s {
	case StatusDenied, StatusInvalid, StatusRejected, StatusExpired, StatusDuplicate, StatusBlocked, StatusFailed, StatusUnavailable:
		return true
	}
	return false
}

// Bounds on what the prose quotes of text someone else chose.
const (
	BoundName   = 200      // a tool name, an approval id
	BoundReason = 1000     // a policy's reason, an operator's note, a server's message
	BoundData   = 64 << 10 // what the status tool quotes of arguments
)

// Quote escapes text a server, the model or an operator chose, cut first
// so an escape is never split.
func Quote(s string, n int) string { return trace.Sanitize(trace.Truncate(s, n)) }

// Answer is what one call returns to the host.
type Answer struct {
	Status Status
	Text   string
	// Content is the recorded result of a call that ran; Text is then
	// empty and the result is passed back as the server sent it.
	Content json.RawMessage
	// Blocks are the recorded result's typed blocks, returned as the
	// server sent them when there are any.
	Blocks  []agentrt.ResultBlock
	IsError bool
	// Run and Approval name what a held call waits on (PENDING_APPROVAL,
	// UNKNOWN_OUTCOME), for the input_required a 2026-07-28 host is given.
	Run, Approval string
}

// Says is the proxy's own answer s, its text the status word, a colon and
// the prose.
func Says(s Status, format string, args ...any) Answer {
	return Answer{Status: s, Text: string(s) + ": " + fmt.Sprintf(format, args...), IsError: s.IsError()}
}

// StatusMetaKey is the _meta key that marks the proxy's own answers. Its
// value is an object whose "status" is the answer's status word. The proxy
// never passes a server's _meta on, so no server's result carries it: a
// host tells the proxy's answers from a server's by this key, never by
// the text.
const StatusMetaKey = "gated-tools/status"

// serverTextMark starts a server's text that would otherwise begin like
// one of the proxy's answers (a status word and a colon).
const serverTextMark = "[server text] "

// Result is the MCP result. A recorded result that is a JSON string is
// the server's text; an object is also its structured content. The
// proxy's own answers carry StatusMetaKey; a server's text that begins
// with a status word is marked so it cannot read as one.
func (a Answer) Result() *sdk.CallToolResult {
	if a.Status == "" && len(a.Blocks) > 0 {
		res := &sdk.CallToolResult{Content: ContentOf(a.Blocks)}
		if len(a.Content) > 0 && a.Content[0] == '{' {
			res.StructuredContent = json.RawMessage(a.Content)
		}
		return res
	}
	if a.Status == "" {
		var text string
		if err := json.Unmarshal(a.Content, &text); err == nil {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: unmistakable(text)}}}
		}
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: unmistakable(string(a.Content))}}}
		if len(a.Content) > 0 && a.Content[0] == '{' {
			res.StructuredContent = json.RawMessage(a.Content)
		}
		return res
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}, IsError: a.IsError,
		Meta: sdk.Meta{StatusMetaKey: map[string]any{"status": string(a.Status)}}}
}

// statuses are every status word an answer can start with.
var statuses = []Status{StatusPendingApproval, StatusInProgress, StatusDenied, StatusInvalid, StatusRejected, StatusExpired,
	StatusDuplicate, StatusBlocked, StatusUnknownOutcome, StatusFailed, StatusUnrecorded, StatusUnavailable, StatusGateStatus}

// unmistakable marks a server's text that begins, past any blank or
// invisible characters and in any case, with a status word and a colon.
func unmistakable(s string) string {
	if impersonates(s) {
		return serverTextMark + s
	}
	return s
}

func impersonates(s string) bool {
	t := strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || unicode.IsControl(r) })
	if strings.HasPrefix(t, serverTextMark) {
		return false
	}
	for _, st := range statuses {
		if len(t) >= len(st) && strings.EqualFold(t[:len(st)], string(st)) {
			rest := strings.TrimLeftFunc(t[len(st):], func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) })
			if rest == "" || rest[0] == ':' {
				return true
			}
		}
	}
	return false
}

// Pending answers that the call waits as approval approvalID and has not run.
func Pending(approvalID string, waited time.Duration) Answer {
	return Says(StatusPendingApproval, "this call needs an operator's approval and has not run. The request is waiting as approval %s. "+
		"Calling this tool again with exactly the same arguments collects the decision; a call with other arguments is a new request. "+
		"You may go on with other work meanwhile.", Quote(approvalID, BoundName))
}

// Unknown answers that an identical call may have taken effect; approvalID asks the operator.
func Unknown(approvalID string) Answer {
	return Says(StatusUnknownOutcome, "an identical call was started before and it is not known whether it took effect. "+
		"It will not run again unless an operator approves (request %s); until then no other call that changes something may run through this tool. "+
		"Do not try to reach the same effect another way; calling again with exactly the same arguments collects the decision.", Quote(approvalID, BoundName))
}

// InProgress answers that an identical call is running now.
func InProgress() Answer {
	return Says(StatusInProgress, "an identical call is running now and has not finished. Do not repeat it; call again later with the same arguments to learn its outcome.")
}

// Denied answers that the policy refuses the call for reason.
func Denied(reason string) Answer {
	return Says(StatusDenied, "the operator's policy does not allow this call (%s). It did not run.", Quote(reason, BoundReason))
}

// Refused answers that the call was refused before it reached the server.
func Refused(reason string) Answer {
	return Says(StatusDenied, "the call was refused before it reached the server (%s). It did not run.", Quote(reason, BoundReason))
}

// schemaLocation is the location the runtime's schema errors name, which
// says nothing the model needs.
var schemaLocation = regexp.MustCompile(` with '[a-z]+://[^']*'`)

// Invalid answers that the arguments were refused for reason, its schema location left out.
func Invalid(reason string) Answer {
	reason = schemaLocation.ReplaceAllString(reason, "")
	return Says(StatusInvalid, "the arguments were refused: %s. Nothing ran; correct the arguments and call again.", Quote(reason, BoundReason))
}

// Rejected answers that an operator rejected this exact request, with note.
func Rejected(note string, window time.Duration) Answer {
	n := ""
	if note != "" {
		n = " with the note: " + Quote(note, BoundReason)
	}
	return Says(StatusRejected, "an operator rejected this exact request%s. It did not run, and the same request will not be asked again for %s.", n, window.Round(time.Second))
}

// Expired answers that no operator decided in time.
func Expired() Answer {
	return Says(StatusExpired, "no operator decided this request in time. It did not run.")
}

// Duplicate answers that this exact call already ran ago, with outcome.
func Duplicate(ago time.Duration, outcome index.CallOutcome, detail string) Answer {
	what := "it succeeded"
	switch outcome {
	case index.OutcomeFailed:
		what = "the server reported a failure: " + Quote(detail, BoundReason)
	case index.OutcomeUnrecorded:
		what = "its result could not be recorded"
	}
	when := "already ran"
	if ago >= time.Second {
		when = fmt.Sprintf("already ran %s ago", ago.Round(time.Second))
	}
	return Says(StatusDuplicate, "this exact call %s (%s). It was not run again.", when, what)
}

// BlockedByUnknown answers that an unknown outcome blocks the tool.
func BlockedByUnknown() Answer {
	return Says(StatusBlocked, "an earlier call to this tool may or may not have taken effect and waits for an operator's decision; "+
		"until then no other call that changes something runs through this tool. It did not run.")
}

// BlockedByCap answers that n approvals are open, the most allowed.
func BlockedByCap(n int) Answer {
	return Says(StatusBlocked, "%d requests already wait for an operator's approval, the most allowed at once; this one was not asked. It did not run.", n)
}

// Failed answers that the call ran and the server reported message.
func Failed(message string) Answer {
	return Says(StatusFailed, "the call ran and the server reported an error: %s", Quote(message, BoundReason))
}

// Unrecorded answers that the call ran but its result was not recorded.
func Unrecorded(reason string) Answer {
	return Says(StatusUnrecorded, "the call ran, but its result could not be recorded (%s). It will not be run again as this exact request.", Quote(reason, BoundReason))
}

// Unavailable answers that the proxy could not handle the call now, for why.
func Unavailable(why string) Answer {
	return Says(StatusUnavailable, "the call could not be handled now (%s). It did not run.", why)
}

// ContentOf returns recorded blocks as MCP content, as the server sent
// them: a block the runtime cut at its bounds is marked, and one whose
// data it left out is a line naming its type, size and hash. The first
// text is marked like a server's text result when it would read as the
// proxy's own answer.
func ContentOf(blocks []agentrt.ResultBlock) []sdk.Content {
	out := make([]sdk.Content, 0, len(blocks))
	first := true
	for _, b := range blocks {
		omitted := b.Truncated && len(b.Data) == 0 && b.Text == "" && b.Type != agentrt.ResultResourceLink
		switch {
		case omitted:
			out = append(out, &sdk.TextContent{Text: fmt.Sprintf("[%s %s of %d bytes, sha256 %s, left out at the recorded bound]",
				b.Type, Quote(b.MIMEType, BoundName), b.Size, b.SHA256)})
		case b.Type == agentrt.ResultText:
			t := b.Text
			if first {
				t, first = unmistakable(t), false
			}
			if b.Truncated {
				t += " [truncated]"
			}
			out = append(out, &sdk.TextContent{Text: t})
		case b.Type == agentrt.ResultImage:
			out = append(out, &sdk.ImageContent{Data: b.Data, MIMEType: b.MIMEType})
		case b.Type == agentrt.ResultAudio:
			out = append(out, &sdk.AudioContent{Data: b.Data, MIMEType: b.MIMEType})
		case b.Type == agentrt.ResultResource:
			rc := &sdk.ResourceContents{URI: b.URI, MIMEType: b.MIMEType, Text: b.Text, Blob: b.Data}
			if b.Truncated && rc.Text != "" {
				rc.Text += " [truncated]"
			}
			out = append(out, &sdk.EmbeddedResource{Resource: rc})
		case b.Type == agentrt.ResultResourceLink:
			l := &sdk.ResourceLink{URI: b.URI, Name: b.Name, Title: b.Title, Description: b.Description, MIMEType: b.MIMEType}
			if b.Size > 0 {
				size := b.Size
				l.Size = &size
			}
			out = append(out, l)
		}
	}
	return out
}
