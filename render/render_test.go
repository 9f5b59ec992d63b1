package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testrig"
)

var update = flag.Bool("update", false, "rewrite golden files")

func toolStep(i int, tool, args, reason string, obs *agentrt.Observation) agentrt.Step {
	return agentrt.Step{ID: fmt.Sprintf("s%d", i), Index: i, Status: agentrt.StepDone,
		Decision:    &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: tool, Args: json.RawMessage(args), Reason: reason},
		Observation: obs}
}

func result(content, summary string) *agentrt.Observation {
	return &agentrt.Observation{Kind: agentrt.ObsToolResult, Content: json.RawMessage(content), Summary: summary}
}

// sequence holds one step of every kind the renderer answers differently,
// and a last step still being decided.
func sequence() agentrt.StepInput {
	return agentrt.StepInput{Steps: agentrt.NewSteps([]agentrt.Step{
		toolStep(0, "list", `{"dir":"."}`, "Look around first.", result(`["a.txt","b.txt"]`, "2 files")),
		toolStep(1, "rm", `{"path":"/"}`, "", &agentrt.Observation{Kind: agentrt.ObsPolicyDenied, Summary: "denied: destructive"}),
		{Index: 2, Decision: &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", InvalidArgs: `{"path":`, Reason: "Reading."},
			Observation: &agentrt.Observation{Kind: agentrt.ObsInvalidDecision, Summary: "arguments are not valid JSON"}},
		{Index: 3, Decision: &agentrt.Decision{Kind: agentrt.KindNoToolCall, Reason: "I think we are done."},
			Observation: &agentrt.Observation{Kind: agentrt.ObsInvalidDecision, Summary: "no tool call"}},
		{Index: 4, Decision: &agentrt.Decision{Kind: agentrt.KindTruncated},
			Observation: &agentrt.Observation{Kind: agentrt.ObsInvalidDecision, Summary: "truncated"}},
		toolStep(5, "fetch", `{"url":"https://example.com"}`, "", &agentrt.Observation{Kind: agentrt.ObsInterrupted, Summary: "interrupted"}),
		toolStep(6, "read", `{"path":"a.txt"}`, "", &agentrt.Observation{Kind: agentrt.ObsToolError, Content: json.RawMessage(`{"error":"not found"}`), Summary: "tool error: not found"}),
		{Index: 7, Status: agentrt.StepInterrupted},
		{Index: 8, Decision: &agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)},
			Observation: &agentrt.Observation{Kind: agentrt.ObsInvalidDecision, Summary: "result does not match the schema"}},
		{Index: 9, Status: agentrt.StepDeciding},
	}...)}
}

// The whole sequence renders as the golden conversation.
func TestMessages_WholeSequence(t *testing.T) {
	msgs, err := Messages(sequence(), Options{Opening: "Goal: tidy the directory."})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(msgs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	testrig.Golden(t, filepath.Join("testdata", "whole_sequence.golden.json"), got, *update)
	// Opening plus two turns per decided step; the two undecided steps are skipped.
	if len(msgs) != 1+2*8 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, m := range msgs {
		want := agentrt.RoleUser
		if i%2 == 1 {
			want = agentrt.RoleAssistant
		}
		if m.Role != want {
			t.Fatalf("message %d has role %s; turns must alternate", i, m.Role)
		}
	}
}

// The step being decided and a step interrupted while deciding are skipped
// and take no place in the window.
func TestMessages_SkipsTheStepBeingDecided(t *testing.T) {
	in := agentrt.StepInput{Steps: agentrt.NewSteps([]agentrt.Step{
		toolStep(0, "a", `{}`, "", result(`"old"`, "old summary")),
		{Index: 1, Status: agentrt.StepInterrupted},
		toolStep(2, "b", `{}`, "", result(`"new"`, "new summary")),
		{Index: 3, Status: agentrt.StepDeciding},
	}...)}
	msgs, err := Messages(in, Options{Opening: "go", RecentResults: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want 5", len(msgs))
	}
	if msgs[2].Content[0].Content != `"old"` || msgs[4].Content[0].Content != `"new"` {
		t.Fatalf("the window must count rendered steps only: %q %q", msgs[2].Content[0].Content, msgs[4].Content[0].Content)
	}
	if msgs[3].Content[0].ToolUseID != "step_2" || msgs[4].Content[0].ToolUseID != "step_2" {
		t.Fatalf("ids = %q / %q", msgs[3].Content[0].ToolUseID, msgs[4].Content[0].ToolUseID)
	}
}

// Results outside the recent window, or over the cap, show their summary.
func TestMessages_RecentWindowAndContentCap(t *testing.T) {
	var steps []agentrt.Step
	for i := 0; i < 5; i++ {
		steps = append(steps, toolStep(i, "t", `{}`, "", result(fmt.Sprintf(`"content %d"`, i), fmt.Sprintf("summary %d", i))))
	}
	steps[4].Observation.Content = json.RawMessage(`"` + strings.Repeat("x", 40) + `"`)
	in := agentrt.StepInput{Steps: agentrt.NewSteps(steps...)}
	msgs, err := Messages(in, Options{Opening: "go", RecentResults: 3, MaxContentBytes: 30, ToolUseID: func(st agentrt.StepView) string { return fmt.Sprintf("call-%d", st.Index) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"[summary] summary 0", "[summary] summary 1", `"content 2"`, `"content 3"`, "[summary] summary 4"}
	for i, w := range want {
		b := msgs[2+2*i].Content[0]
		if b.Content != w || b.ToolUseID != fmt.Sprintf("call-%d", i) || b.IsError {
			t.Errorf("step %d: %+v, want content %q", i, b, w)
		}
	}
}

// An interrupted result asks the model to request the call again rather than
// assuming an outcome.
func TestMessages_InterruptedResultAsksAgain(t *testing.T) {
	in := agentrt.StepInput{Steps: agentrt.NewSteps([]agentrt.Step{toolStep(0, "fetch", `{}`, "", &agentrt.Observation{Kind: agentrt.ObsInterrupted, Content: json.RawMessage(`"stale"`), Summary: "x"})}...)}
	msgs, _ := Messages(in, Options{Opening: "go"})
	b := msgs[2].Content[0]
	if b.Type != agentrt.BlockToolResult || b.Content != InterruptedText || !b.IsError {
		t.Fatalf("block = %+v", b)
	}
}

// Decisions that could not execute are answered with a nudge keyed on why.
func TestMessages_DeniedAndTruncatedNudges(t *testing.T) {
	msgs, _ := Messages(sequence(), Options{Opening: "go"})
	if b := msgs[4].Content[0]; b.Content != "[summary] denied: destructive" || !b.IsError {
		t.Errorf("denied: %+v", b)
	}
	if b := msgs[6].Content[0]; b.Type != agentrt.BlockToolResult || !strings.Contains(b.Content, "not valid JSON") || !b.IsError {
		t.Errorf("invalid arguments: %+v", b)
	}
	if in := msgs[5].Content[1].Input; string(in) != `{}` {
		t.Errorf("invalid arguments must be shown as {}, got %s", in)
	}
	if b := msgs[8].Content[0]; b.Type != agentrt.BlockText || b.Text != NoToolCallText {
		t.Errorf("no tool call: %+v", b)
	}
	if b := msgs[10].Content[0]; b.Text != TruncatedText {
		t.Errorf("truncated: %+v", b)
	}
	if b := msgs[9].Content[0]; b.Text != "(no tool call)" {
		t.Errorf("empty non-tool turn: %+v", b)
	}
	if b := msgs[16].Content[0]; !strings.Contains(b.Text, "(result does not match the schema)") {
		t.Errorf("other: %+v", b)
	}
}

// Options are validated.
func TestMessages_RequiresAnOpening(t *testing.T) {
	if _, err := Messages(agentrt.StepInput{}, Options{}); !errors.Is(err, ErrNoOpening) {
		t.Fatalf("no opening: %v", err)
	}
	if _, err := Messages(agentrt.StepInput{}, Options{Opening: "x", RecentResults: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative window: %v", err)
	}
	if _, err := Messages(agentrt.StepInput{}, Options{Opening: "x", MaxContentBytes: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative cap: %v", err)
	}
}

// Appending to one turn's content never changes another turn.
func TestMessages_AppendingToATurnLeavesTheNextAlone(t *testing.T) {
	msgs, _ := Messages(sequence(), Options{Opening: "go"})
	before, _ := json.Marshal(msgs)
	for i := range msgs {
		_ = append(msgs[i].Content, agentrt.ContentBlock{Type: agentrt.BlockText, Text: "injected"})
	}
	after, _ := json.Marshal(msgs)
	if !bytes.Equal(before, after) {
		t.Fatal("appending to a turn changed the conversation")
	}
}

// Each stop reason maps to its decision, and a cut-off or refused call never
// executes.
func TestDecide_StopReasonsAndToolCall(t *testing.T) {
	call := []agentrt.ToolUse{{ID: "c", Name: "rm", Args: json.RawMessage(`{"path":"/"}`)}}
	cases := []struct {
		resp agentrt.ModelResponse
		kind agentrt.DecisionKind
	}{
		{agentrt.ModelResponse{StopReason: agentrt.StopRefusal, Text: " No. ", ToolUses: call}, agentrt.KindRefused},
		{agentrt.ModelResponse{StopReason: StopContextWindowExceeded}, agentrt.KindFail},
		{agentrt.ModelResponse{StopReason: agentrt.StopMaxTokens, Text: "part", ToolUses: call}, agentrt.KindTruncated},
		{agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, Text: "  done  "}, agentrt.KindNoToolCall},
		{agentrt.ModelResponse{StopReason: agentrt.StopToolUse, Text: "Removing.", ToolUses: call}, agentrt.KindToolCall},
		{agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, ToolUses: call}, agentrt.KindToolCall},
	}
	for i, c := range cases {
		d := Decide(c.resp)
		if d.Kind != c.kind {
			t.Errorf("case %d: kind %s, want %s", i, d.Kind, c.kind)
		}
		if d.Kind != agentrt.KindToolCall && (d.Tool != "" || len(d.Args) != 0) {
			t.Errorf("case %d: a %s decision carries a call: %+v", i, d.Kind, d)
		}
	}
	if d := Decide(cases[0].resp); d.Reason != "No." || d.Message != "" {
		t.Errorf("refusal = %+v, want the text as its reason", d)
	}
	if d := Decide(cases[3].resp); d.Reason != "done" {
		t.Errorf("no tool call reason = %q", d.Reason)
	}
	if d := Decide(cases[4].resp); d.Tool != "rm" || string(d.Args) != `{"path":"/"}` || d.Reason != "Removing." {
		t.Errorf("tool call = %+v", d)
	}
	if d := Decide(agentrt.ModelResponse{StopReason: agentrt.StopToolUse, ToolUses: []agentrt.ToolUse{{Name: "x"}}}); string(d.Args) != `{}` {
		t.Errorf("absent args must be {}, got %s", d.Args)
	}
}

// Further tool uses are named as not executed, within the cap.
func TestDecide_ExtraToolUsesAreNamed(t *testing.T) {
	resp := agentrt.ModelResponse{StopReason: agentrt.StopToolUse, Text: "Doing three things.", ToolUses: []agentrt.ToolUse{
		{Name: "a", Args: json.RawMessage(`{}`)}, {Name: "b"}, {Name: "c"},
	}}
	d := Decide(resp)
	if d.Tool != "a" || d.Reason != "Doing three things. [2 further tool call(s) not executed: b, c]" {
		t.Fatalf("decision = %+v", d)
	}
	long := strings.Repeat("n", 200)
	resp.Text = strings.Repeat("é", 400)
	resp.ToolUses = []agentrt.ToolUse{{Name: "a"}, {Name: long}, {Name: long}, {Name: long}, {Name: long}}
	d = Decide(resp)
	if len(d.Reason) > ReasonBytes || !utf8.ValidString(d.Reason) || !strings.Contains(d.Reason, "[4 further tool call(s)") {
		t.Fatalf("reason is %d bytes: %q", len(d.Reason), d.Reason)
	}
}

// A reason is capped at ReasonBytes without splitting a rune.
func TestDecide_NoToolCallReasonIsCapped(t *testing.T) {
	for _, r := range []string{"a", "é", "€", "𝄞"} {
		d := Decide(agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, Text: strings.Repeat(r, 1000)})
		if len(d.Reason) > ReasonBytes || !utf8.ValidString(d.Reason) || !strings.HasSuffix(d.Reason, "…") {
			t.Errorf("%q: reason is %d bytes, valid=%v", r, len(d.Reason), utf8.ValidString(d.Reason))
		}
	}
}

// callerFunc is a hand-written ModelCaller.
type callerFunc func(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error)

func (f callerFunc) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return f(ctx, req)
}

// Agent sends the rendered conversation, the tools, the system prompt and the
// cap, and decides from the reply; a model error comes back as is.
func TestAgent_DecidesThroughTheStepsModel(t *testing.T) {
	var got agentrt.ModelRequest
	in := sequence()
	in.Tools = []agentrt.ToolSpec{{Name: "list"}}
	in.Model = callerFunc(func(_ context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		got = req
		return agentrt.ModelResponse{StopReason: agentrt.StopToolUse, ToolUses: []agentrt.ToolUse{{Name: "list", Args: json.RawMessage(`{"dir":"b"}`)}}}, nil
	})
	a := Agent{Options: Options{Opening: "go"}, System: "sys", MaxOutputTokens: 99}
	d, err := a.Decide(context.Background(), in)
	if err != nil || d.Kind != agentrt.KindToolCall || d.Tool != "list" {
		t.Fatalf("decision = %+v, %v", d, err)
	}
	want, _ := Messages(in, a.Options)
	if got.System != "sys" || got.MaxOutputTokens != 99 || len(got.Tools) != 1 || len(got.Messages) != len(want) {
		t.Fatalf("request = %+v", got)
	}
	boom := &agentrt.LimitError{Reason: agentrt.ReasonLimitCost}
	in.Model = callerFunc(func(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{}, boom
	})
	if _, err := a.Decide(context.Background(), in); err != boom {
		t.Fatalf("err = %v, want the model's error as is", err)
	}
	in.Model = nil
	if _, err := a.Decide(context.Background(), in); !errors.Is(err, ErrNoModel) {
		t.Fatalf("no model: %v", err)
	}
}

// A tool call without a tool name is shown as text with a nudge, never as a
// nameless tool use a provider would refuse; an empty hook id falls back.
func TestMessages_NamelessToolCallIsNotAToolUse(t *testing.T) {
	in := agentrt.StepInput{Steps: agentrt.NewSteps([]agentrt.Step{
		{Index: 0, Decision: &agentrt.Decision{Kind: agentrt.KindToolCall, Args: json.RawMessage(`{}`)},
			Observation: &agentrt.Observation{Kind: agentrt.ObsInvalidDecision, Summary: "unknown tool \"\""}},
		toolStep(1, "list", `{}`, "", result(`[]`, "empty")),
	}...)}
	msgs, err := Messages(in, Options{Opening: "go", ToolUseID: func(agentrt.StepView) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if b := msgs[1].Content[0]; b.Type != agentrt.BlockText || len(msgs[1].Content) != 1 {
		t.Fatalf("assistant turn = %+v", msgs[1].Content)
	}
	if b := msgs[2].Content[0]; b.Type != agentrt.BlockText || !strings.Contains(b.Text, "unknown tool") {
		t.Fatalf("answer = %+v", b)
	}
	if msgs[3].Content[0].ToolUseID != "step_1" || msgs[4].Content[0].ToolUseID != "step_1" {
		t.Fatalf("an empty hook id must fall back: %+v", msgs[3].Content[0])
	}
}

// A recent result's recorded image goes with its tool result when the
// provider takes images (Options.Images); otherwise, and for every other
// block that is not text, the result gets one line naming the block's
// type, media type, size and hash.
func TestMessages_ResultBlocksPassAsImagesOrPlaceholders(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nimage bytes")
	obs := result(`"the screen\n[image omitted]\n[resource link omitted]"`, "shot")
	obs.Blocks = []agentrt.ResultBlock{
		{Type: agentrt.ResultText, Text: "the screen", Size: 10, SHA256: "t"},
		{Type: agentrt.ResultImage, MIMEType: "image/png", Data: png, Size: int64(len(png)), SHA256: "abc123"},
		{Type: agentrt.ResultResourceLink, URI: "file:///1.png", MIMEType: "image/png", Size: 99, SHA256: "def456"},
	}
	in := agentrt.StepInput{Steps: agentrt.NewSteps(toolStep(0, "shot", `{}`, "", obs))}
	msgs, err := Messages(in, Options{Opening: "go", Images: true})
	if err != nil {
		t.Fatal(err)
	}
	r := msgs[2].Content[0]
	if len(r.Images) != 1 || r.Images[0].MIMEType != "image/png" || string(r.Images[0].Data) != string(png) {
		t.Fatalf("images = %+v", r.Images)
	}
	if strings.Contains(r.Content, "[image block") || !strings.Contains(r.Content, "[resource_link block: image/png, 99 bytes, sha256 def456]") {
		t.Fatalf("content with images = %q", r.Content)
	}
	msgs, err = Messages(in, Options{Opening: "go"})
	if err != nil {
		t.Fatal(err)
	}
	r = msgs[2].Content[0]
	want := fmt.Sprintf("[image block: image/png, %d bytes, sha256 abc123]", len(png))
	if len(r.Images) != 0 || !strings.Contains(r.Content, want) || strings.Count(r.Content, "\n[") != 2 {
		t.Fatalf("content without images = %q", r.Content)
	}
}
