package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/textcut"
)

const (
	// ReasonBytes caps a decision's reason and message.
	ReasonBytes = 500
	// NameBytes caps each unexecuted tool name listed in a reason.
	NameBytes = 64
	// StopContextWindowExceeded is the stop reason of a request that no
	// longer fits the model's context window.
	StopContextWindowExceeded = "model_context_window_exceeded"
)

// Decide turns a model reply into a decision:
//
//   - refused (StopRefusal): a refused decision, which the driver records as
//     invalid, so nothing in a refused reply executes;
//   - over the context window: a fail decision, since a nudge only makes the
//     conversation longer;
//   - cut off (StopMaxTokens): a truncated decision, which the driver records
//     as invalid, so a partial call never executes even if it parses;
//   - no tool use: a no_tool_call decision with the text as its reason;
//   - otherwise the first tool use, with any further ones named in the
//     reason as not executed.
//
// Reasons and messages are capped at ReasonBytes without splitting a rune.
func Decide(resp agentrt.ModelResponse) agentrt.Decision {
	text := strings.TrimSpace(resp.Text)
	switch resp.StopReason {
	case agentrt.StopRefusal:
		return agentrt.Decision{Kind: agentrt.KindRefused, Reason: textcut.Truncate(text, ReasonBytes)}
	case StopContextWindowExceeded:
		return agentrt.Decision{Kind: agentrt.KindFail, Message: "the conversation no longer fits the model's context window"}
	case agentrt.StopMaxTokens:
		return agentrt.Decision{Kind: agentrt.KindTruncated, Reason: textcut.Truncate(text, ReasonBytes)}
	}
	if len(resp.ToolUses) == 0 {
		return agentrt.Decision{Kind: agentrt.KindNoToolCall, Reason: textcut.Truncate(text, ReasonBytes)}
	}
	first := resp.ToolUses[0]
	args := json.RawMessage(`{}`)
	if len(bytes.TrimSpace(first.Args)) > 0 {
		args = append(json.RawMessage(nil), first.Args...)
	}
	return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: first.Name, Args: args, Reason: reason(text, resp.ToolUses[1:])}
}

// reason composes the text and the note naming unexecuted tool uses, the
// note kept whole (up to half the cap) and the text cut to fit beside it.
func reason(text string, extra []agentrt.ToolUse) string {
	if len(extra) == 0 {
		return textcut.Truncate(text, ReasonBytes)
	}
	names := make([]string, len(extra))
	for i, tu := range extra {
		names[i] = textcut.Truncate(tu.Name, NameBytes)
	}
	note := textcut.Truncate(fmt.Sprintf("[%d further tool call(s) not executed: %s]", len(extra), strings.Join(names, ", ")), ReasonBytes/2)
	if text == "" {
		return note
	}
	return textcut.Truncate(text, ReasonBytes-len(note)-1) + " " + note
}

// ErrNoModel says an Agent was asked to decide without a model handle; the
// driver passes one only when configured with a model.
var ErrNoModel = errors.New("render: the step input has no model; configure the driver with one")

// Agent is a model-backed agentrt.Agent: it renders the record with Options,
// asks the step's accounted model handle, and decides with Decide.
type Agent struct {
	// Options render the conversation.
	Options Options
	// System is the system prompt; zero sends none.
	System string
	// MaxOutputTokens caps each reply; zero leaves the cap to the model's
	// configuration.
	MaxOutputTokens int64
}

// Decide implements agentrt.Agent. A model error is returned as is, so the
// driver can tell a limit or an unavailable model from anything else.
func (a Agent) Decide(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	if in.Model == nil {
		return agentrt.Decision{}, ErrNoModel
	}
	msgs, err := Messages(in, a.Options)
	if err != nil {
		return agentrt.Decision{}, err
	}
	resp, err := in.Model.Generate(ctx, agentrt.ModelRequest{System: a.System, Messages: msgs, Tools: in.Tools, MaxOutputTokens: a.MaxOutputTokens})
	if err != nil {
		return agentrt.Decision{}, err
	}
	return Decide(resp), nil
}

var _ agentrt.Agent = Agent{}
