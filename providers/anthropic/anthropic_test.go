package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/internal/adaptertest"
)

const testKey = "sk-ant-api03-test-0123456789abcdef"

func newModel(t *testing.T, base string) *Model {
	t.Helper()
	return adaptertest.Open(t, New, Config{Endpoint: providers.Endpoint{BaseURL: base, APIKey: providers.NewSecret(testKey), Model: "claude-test"}})
}

func message(content, stop, usage string) string {
	return fmt.Sprintf(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":%s,"stop_reason":%s,"stop_sequence":null,"usage":%s}`, content, stop, usage)
}

var (
	serve         = adaptertest.Serve
	simpleRequest = adaptertest.SimpleRequest
)

const okUsage = `{"input_tokens":20,"output_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`

// A text reply maps to end_turn; the request carries the headers, the
// default cap and no tools.
func TestGenerate_TextReply(t *testing.T) {
	f := serve(t, 200, nil, message(`[{"type":"text","text":"Hello."}]`, `"end_turn"`, okUsage))
	resp, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello." || resp.StopReason != agentrt.StopEndTurn || resp.Usage != (agentrt.Usage{InputTokens: 20, OutputTokens: 7}) || len(resp.Raw) == 0 {
		t.Fatalf("resp = %+v", resp)
	}
	h := f.Header(0)
	if h.Get("x-api-key") != testKey || h.Get("anthropic-version") != APIVersion || h.Get("Authorization") != "" {
		t.Fatalf("headers = %v", h)
	}
	if f.Path(0) != "POST /v1/messages" {
		t.Fatalf("path = %q", f.Path(0))
	}
	b := f.Body(t, 0)
	if b["max_tokens"] != float64(DefaultMaxOutputTokens) || b["model"] != "claude-test" {
		t.Fatalf("body = %v", b)
	}
	for _, absent := range []string{"tools", "tool_choice", "system", "stream"} {
		if _, ok := b[absent]; ok {
			t.Errorf("body carries %q", absent)
		}
	}
}

// A tool use reply maps to tool_use with its input as raw JSON; the request
// carries the system prompt, tools with input_schema, no tool_choice, and the
// history with tool results first in their turn.
func TestGenerate_MapsToolUseAndUsage(t *testing.T) {
	f := serve(t, 200, nil, message(`[{"type":"text","text":"I'll read it."},
{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"a.txt","n":12345678901234567890}}]`, `"tool_use"`,
		`{"input_tokens":100,"output_tokens":30,"cache_creation_input_tokens":8,"cache_read_input_tokens":50}`))
	req := agentrt.ModelRequest{
		System: "Be careful.",
		Messages: []agentrt.Message{
			{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Read a.txt"}}},
			{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{
				{Type: agentrt.BlockText, Text: "Listing."},
				{Type: agentrt.BlockToolUse, ToolUseID: "step_0", Name: "list"},
			}},
			{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{
				{Type: agentrt.BlockText, Text: "Note."},
				{Type: agentrt.BlockToolResult, ToolUseID: "step_0", Content: "denied", IsError: true},
			}},
		},
		Tools:           []agentrt.ToolSpec{{Name: "read_file", Description: "Reads.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		MaxOutputTokens: 512,
	}
	resp, err := newModel(t, f.URL).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != agentrt.StopToolUse || resp.Text != "I'll read it." || len(resp.ToolUses) != 1 {
		t.Fatalf("resp = %+v", resp)
	}
	if tu := resp.ToolUses[0]; tu.ID != "toolu_01" || tu.Name != "read_file" || string(tu.Args) != `{"path":"a.txt","n":12345678901234567890}` {
		t.Fatalf("tool use = %+v (%s)", tu, tu.Args)
	}
	// 100 + 50 read + 8 written at 1.25 = 160.
	if want := (agentrt.Usage{InputTokens: 160, OutputTokens: 30, CachedInputTokens: 50}); resp.Usage != want {
		t.Fatalf("usage = %+v, want %+v", resp.Usage, want)
	}
	b := f.Body(t, 0)
	if _, ok := b["tool_choice"]; ok {
		t.Error("tool_choice must be absent")
	}
	if b["system"] != "Be careful." || b["max_tokens"] != float64(512) {
		t.Errorf("body = %v", b)
	}
	wantMsgs := `[{"content":[{"text":"Read a.txt","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"Listing.","type":"text"},{"id":"step_0","input":{},"name":"list","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":"denied","is_error":true,"tool_use_id":"step_0","type":"tool_result"},{"text":"Note.","type":"text"}],"role":"user"}]`
	if got, _ := json.Marshal(b["messages"]); string(got) != wantMsgs {
		t.Errorf("messages =\n%s\nwant\n%s", got, wantMsgs)
	}
	wantTools := `[{"description":"Reads.","input_schema":{"properties":{"path":{"type":"string"}},"type":"object"},"name":"read_file"}]`
	if got, _ := json.Marshal(b["tools"]); string(got) != wantTools {
		t.Errorf("tools =\n%s\nwant\n%s", got, wantTools)
	}
}

// Cache writes fold into input at 1.25x (5 minutes, rounded up) and 2x (1 hour).
func TestGenerate_FoldsCacheUsage(t *testing.T) {
	f := serve(t, 200, nil, message(`[{"type":"text","text":"ok"}]`, `"end_turn"`,
		`{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":9,"cache_read_input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":5,"ephemeral_1h_input_tokens":4}}`))
	resp, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	// 10 + 3 + ceil(5*1.25)=7 + 4*2=8 = 28.
	if want := (agentrt.Usage{InputTokens: 28, OutputTokens: 1, CachedInputTokens: 3}); resp.Usage != want {
		t.Fatalf("usage = %+v, want %+v", resp.Usage, want)
	}
}

// max_tokens and refusal keep text and usage and drop tool uses.
func TestGenerate_RefusalAndMaxTokensKeepUsageDropToolUse(t *testing.T) {
	content := `[{"type":"text","text":"partial"},{"type":"tool_use","id":"toolu_9","name":"rm","input":{"path":"/"}}]`
	for _, c := range []struct{ stop, want string }{
		{`"max_tokens"`, agentrt.StopMaxTokens},
		{`"refusal"`, agentrt.StopRefusal},
		{`"stop_sequence"`, agentrt.StopEndTurn},
		{`"pause_turn"`, "pause_turn"},
	} {
		f := serve(t, 200, nil, message(content, c.stop, okUsage))
		resp, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
		if err != nil {
			t.Fatalf("%s: %v", c.stop, err)
		}
		dropped := c.want == agentrt.StopMaxTokens || c.want == agentrt.StopRefusal
		if resp.StopReason != c.want || resp.Text != "partial" || resp.Usage.InputTokens != 20 || (len(resp.ToolUses) == 0) != dropped {
			t.Errorf("%s: resp = %+v", c.stop, resp)
		}
	}
}

// Anthropic's own statuses (409, 529) are transient, a reply whose content
// is not a list keeps its usage, and a tool input that is not an object is
// refused before anything is sent.
func TestGenerate_AnthropicErrorsClassified(t *testing.T) {
	var te *agentrt.TransientError
	for _, status := range []int{409, 529} {
		f := serve(t, status, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		if _, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest()); !errors.As(err, &te) {
			t.Fatalf("%d: %v, want transient", status, err)
		}
	}
	f := serve(t, 200, nil, `{"type":"message","content":"nope","usage":{"input_tokens":4,"output_tokens":0}}`)
	_, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	var sv *agentrt.ServedError
	if !errors.As(err, &sv) || sv.Usage.InputTokens != 4 || !errors.Is(err, providers.ErrUnusableReply) {
		t.Fatalf("bad content: %v", err)
	}
	bad := agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolUse, ToolUseID: "x", Name: "t", Input: json.RawMessage(`[1]`)}}}}}
	if _, err = newModel(t, f.URL).Generate(context.Background(), bad); !errors.Is(err, providers.ErrBadRequest) {
		t.Fatalf("non-object input: %v", err)
	}
	if f.Requests() != 1 {
		t.Fatalf("a request that cannot be expressed was sent (%d requests)", f.Requests())
	}
}

// A tool result that carries images goes as a list of its text and base64
// image blocks, as the API takes images in tool results.
func TestGenerate_ToolResultImagesAreImageBlocks(t *testing.T) {
	f := serve(t, 200, nil, message(`[{"type":"text","text":"A cat."}]`, `"end_turn"`, okUsage))
	req := agentrt.ModelRequest{Messages: []agentrt.Message{
		{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Look."}}},
		{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolUse, ToolUseID: "step_0", Name: "shot"}}},
		{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolResult, ToolUseID: "step_0", Content: "the screen",
			Images: []agentrt.ImagePart{{MIMEType: "image/png", Data: []byte("png bytes")}}}}},
	}}
	if _, err := newModel(t, f.URL).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.Body(t, 0)["messages"].([]any)[2])
	want := `{"content":[{"content":[{"text":"the screen","type":"text"},{"source":{"data":"cG5nIGJ5dGVz","media_type":"image/png","type":"base64"},"type":"image"}],"tool_use_id":"step_0","type":"tool_result"}],"role":"user"}`
	if string(got) != want {
		t.Fatalf("tool result =\n%s\nwant\n%s", got, want)
	}
}
