package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/textcut"
)

const (
	// DefaultRecentResults is how many of the latest rendered steps show their
	// result in full when Options.RecentResults is zero.
	DefaultRecentResults = 6
	// DefaultMaxContentBytes is the largest result shown in full when
	// Options.MaxContentBytes is zero.
	DefaultMaxContentBytes = 24000
)

// Texts the model reads in place of a result it cannot have.
const (
	// InterruptedText answers a tool call whose process was interrupted.
	InterruptedText = "This tool call was interrupted before its result was recorded, so its outcome is unknown. If you still need it, request the call again."
	// NoResultText answers a tool call with no recorded observation.
	NoResultText = "No result was recorded for this tool call. If you still need it, request the call again."
	// NoToolCallText answers a reply that held no tool call.
	NoToolCallText = "Your last reply contained no tool call, so nothing ran. Reply with exactly one tool call."
	// TruncatedText answers a reply cut off by the output cap.
	TruncatedText = "Your last reply hit the output token limit before its tool call was complete, so nothing ran. Reply with exactly one short tool call."
)

// ErrNoOpening says Options.Opening is empty; a conversation needs one.
var ErrNoOpening = errors.New("render: Options.Opening is required")

// Options configure Messages.
type Options struct {
	// Opening is the first user message, usually the goal and its rules.
	// Required. It must not depend on anything but the run, or the same
	// record renders differently after a restart.
	Opening string
	// RecentResults is how many of the latest rendered steps show their
	// result in full; older ones show their summary. Zero means
	// DefaultRecentResults.
	RecentResults int
	// MaxContentBytes is the largest result shown in full; a larger one shows
	// its summary. Zero means DefaultMaxContentBytes.
	MaxContentBytes int
	// ToolUseID names the tool use synthesized for a step. Nil, or an empty
	// name returned, means "step_<index>".
	ToolUseID func(step agentrt.StepView) string
	// Images passes the images of a recent result's recorded blocks with
	// its tool result, for a provider that accepts images in tool results
	// (anthropic). Without it, and for every other block that is not
	// text, the result gets a one-line placeholder naming the block's
	// type, media type, size and hash.
	Images bool
}

// MaxResultImages is the most images one rendered tool result carries;
// the rest get placeholders.
const MaxResultImages = 8

// BlockPlaceholder is the one line a result block that is not passed on
// is rendered as.
func BlockPlaceholder(b agentrt.ResultBlock) string {
	media := b.MIMEType
	if media == "" {
		media = "no media type"
	}
	return fmt.Sprintf("[%s block: %s, %d bytes, sha256 %s]", b.Type, textcut.Truncate(media, 100), b.Size, b.SHA256)
}

func (o Options) withDefaults() (Options, error) {
	if o.Opening == "" {
		return o, ErrNoOpening
	}
	if o.RecentResults < 0 {
		return o, &agentrt.ConfigError{Field: "render.Options.RecentResults", Reason: fmt.Sprintf("must not be negative, got %d", o.RecentResults)}
	}
	if o.MaxContentBytes < 0 {
		return o, &agentrt.ConfigError{Field: "render.Options.MaxContentBytes", Reason: fmt.Sprintf("must not be negative, got %d", o.MaxContentBytes)}
	}
	if o.RecentResults == 0 {
		o.RecentResults = DefaultRecentResults
	}
	if o.MaxContentBytes == 0 {
		o.MaxContentBytes = DefaultMaxContentBytes
	}
	if o.ToolUseID == nil {
		o.ToolUseID = defaultToolUseID
	}
	return o, nil
}

func defaultToolUseID(st agentrt.StepView) string { return "step_" + strconv.Itoa(st.Index) }

// Messages renders in as a conversation: the opening as a user turn, then
// for each step with a decision an assistant turn and the user turn that
// answers it. Steps without a decision (the one being decided, or one
// interrupted while deciding) are skipped and take no place in the recent
// window. Every turn owns its content slice.
func Messages(in agentrt.StepInput, opts Options) ([]agentrt.Message, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	decided := 0
	for _, st := range in.Steps.All() {
		if st.Decision != nil {
			decided++
		}
	}
	msgs := make([]agentrt.Message, 0, 1+2*decided)
	msgs = append(msgs, agentrt.Message{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: o.Opening}}})
	firstFull := decided - o.RecentResults
	n := 0
	for _, st := range in.Steps.All() {
		if st.Decision == nil {
			continue
		}
		id := o.ToolUseID(st)
		if id == "" {
			id = defaultToolUseID(st)
		}
		msgs = append(msgs,
			agentrt.Message{Role: agentrt.RoleAssistant, Content: assistantBlocks(st.Decision, id)},
			agentrt.Message{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{answer(&st, id, n >= firstFull, o.MaxContentBytes, o.Images)}},
		)
		n++
	}
	return msgs, nil
}

// assistantBlocks is the model's turn as recorded: its reason, and for a tool
// call the tool use. Arguments that are not a JSON object (invalid ones are
// kept apart by the runtime) are shown as {}; the answer says why nothing
// ran.
func assistantBlocks(d *agentrt.DecisionView, id string) []agentrt.ContentBlock {
	blocks := make([]agentrt.ContentBlock, 0, 2)
	if d.Reason != "" {
		blocks = append(blocks, agentrt.ContentBlock{Type: agentrt.BlockText, Text: d.Reason})
	}
	if toolUse(d) {
		args := d.Args.Raw()
		if !isObject(args) {
			args = json.RawMessage(`{}`)
		}
		return append(blocks, agentrt.ContentBlock{Type: agentrt.BlockToolUse, ToolUseID: id, Name: d.Tool, Input: args})
	}
	if len(blocks) == 0 {
		blocks = append(blocks, agentrt.ContentBlock{Type: agentrt.BlockText, Text: "(no tool call)"})
	}
	return blocks
}

// toolUse reports whether a decision is shown as a tool use. A tool call
// without a tool name is not: providers refuse a nameless tool use, and one
// in the history would make every later request fail.
func toolUse(d *agentrt.DecisionView) bool {
	return d.Kind == agentrt.KindToolCall && d.Tool != ""
}

func isObject(raw json.RawMessage) bool {
	v := bytes.TrimSpace(raw)
	return len(v) > 0 && v[0] == '{' && json.Valid(v)
}

// answer is the user block answering a step: a tool result for a tool call,
// a text nudge for anything else.
func answer(st *agentrt.StepView, id string, full bool, maxBytes int, images bool) agentrt.ContentBlock {
	d, obs := st.Decision, st.Observation
	if !toolUse(d) {
		return agentrt.ContentBlock{Type: agentrt.BlockText, Text: nudge(d.Kind, obs)}
	}
	result := agentrt.ContentBlock{Type: agentrt.BlockToolResult, ToolUseID: id, IsError: true}
	switch {
	case obs == nil:
		result.Content = NoResultText
	case obs.Kind == agentrt.ObsInterrupted:
		result.Content = InterruptedText
	case obs.Kind == agentrt.ObsInvalidDecision:
		result.Content = "This tool call was not executed" + parenthesised(obs.Summary, maxBytes) + ". Reply with exactly one valid tool call."
	default:
		result.IsError = obs.Failure()
		if full && len(obs.Content) > 0 && len(obs.Content) <= maxBytes {
			result.Content = string(obs.Content)
		} else {
			result.Content = "[summary] " + textcut.Truncate(obs.Summary, maxBytes)
		}
		for _, b := range obs.Blocks {
			switch {
			case b.Type == agentrt.ResultText:
			case images && full && b.Type == agentrt.ResultImage && len(b.Data) > 0 && len(result.Images) < MaxResultImages:
				result.Images = append(result.Images, agentrt.ImagePart{MIMEType: b.MIMEType, Data: append([]byte(nil), b.Data...)})
			default:
				result.Content += "\n" + BlockPlaceholder(b)
			}
		}
	}
	return result
}

// nudge answers a decision that was not a tool call.
func nudge(kind agentrt.DecisionKind, obs *agentrt.ObservationView) string {
	switch kind {
	case agentrt.KindNoToolCall:
		return NoToolCallText
	case agentrt.KindTruncated:
		return TruncatedText
	}
	summary := ""
	if obs != nil {
		summary = obs.Summary
	}
	return "Your last reply was not an executable tool call" + parenthesised(summary, ReasonBytes) + ", so nothing ran. Reply with exactly one valid tool call."
}

func parenthesised(s string, maxBytes int) string {
	if s == "" {
		return ""
	}
	return " (" + textcut.Truncate(s, maxBytes) + ")"
}
