package openai

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

const testKey = "sk-test-0123456789abcdef"

func newModel(t *testing.T, base, key string) *Model {
	t.Helper()
	return adaptertest.Open(t, New, Config{Endpoint: providers.Endpoint{BaseURL: base + "/v1", APIKey: providers.NewSecret(key), Model: "gpt-test"}})
}

func completion(message, finish, usage string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-test",
"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":%s}`, message, finish, usage)
}

var (
	serve         = adaptertest.Serve
	simpleRequest = adaptertest.SimpleRequest
)

const okUsage = `{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":4}}`

// A text reply maps to end_turn with its text and usage.
func TestGenerate_TextReply(t *testing.T) {
	f := serve(t, 200, nil, completion(`{"role":"assistant","content":"Hello there.","refusal":null}`, "stop", okUsage))
	resp, err := newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := agentrt.Usage{InputTokens: 19, OutputTokens: 10, CachedInputTokens: 4}
	if resp.Text != "Hello there." || resp.StopReason != agentrt.StopEndTurn || resp.Usage != want || len(resp.ToolUses) != 0 || len(resp.Raw) == 0 {
		t.Fatalf("resp = %+v", resp)
	}
	if got := f.Header(0).Get("Authorization"); got != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", got)
	}
	if f.Path(0) != "POST /v1/chat/completions" {
		t.Fatalf("path = %q", f.Path(0))
	}
	b := f.Body(t, 0)
	if b["stream"] != false || b["model"] != "gpt-test" {
		t.Fatalf("body = %v", b)
	}
	for _, absent := range []string{"tools", "tool_choice", "max_tokens", "max_completion_tokens", "temperature"} {
		if _, ok := b[absent]; ok {
			t.Errorf("body carries %q: %v", absent, b)
		}
	}
}

// A tool call reply maps to tool_use; the request carries the system prompt,
// the history with a tool call and its result, and the tools, with no
// tool_choice.
func TestGenerate_MapsRequestToolCallsAndUsage(t *testing.T) {
	f := serve(t, 200, nil, completion(`{"role":"assistant","content":null,"tool_calls":[
{"id":"call_abc","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.txt\", \"n\": 12345678901234567890}"}},
{"id":"call_def","type":"function","function":{"name":"list","arguments":""}}]}`, "tool_calls", okUsage))
	req := agentrt.ModelRequest{
		System: "You are careful.",
		Messages: []agentrt.Message{
			{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Read a.txt"}}},
			{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{
				{Type: agentrt.BlockText, Text: "Listing first."},
				{Type: agentrt.BlockToolUse, ToolUseID: "step_0", Name: "list", Input: json.RawMessage(`{"dir":"."}`)},
			}},
			{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolResult, ToolUseID: "step_0", Content: `["a.txt"]`}}},
		},
		Tools: []agentrt.ToolSpec{
			{Name: "read_file", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list", Description: "Lists."},
		},
		MaxOutputTokens: 256,
	}
	resp, err := newModel(t, f.URL, testKey).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != agentrt.StopToolUse || len(resp.ToolUses) != 2 {
		t.Fatalf("resp = %+v", resp)
	}
	if tu := resp.ToolUses[0]; tu.ID != "call_abc" || tu.Name != "read_file" || string(tu.Args) != `{"path": "a.txt", "n": 12345678901234567890}` {
		t.Fatalf("tool use 0 = %+v (args %s)", tu, tu.Args)
	}
	if string(resp.ToolUses[1].Args) != `{}` {
		t.Fatalf("empty arguments must be {}, got %s", resp.ToolUses[1].Args)
	}

	b := f.Body(t, 0)
	if _, ok := b["tool_choice"]; ok {
		t.Error("tool_choice must be absent")
	}
	if b["max_tokens"] != float64(256) {
		t.Errorf("max_tokens = %v", b["max_tokens"])
	}
	wantMsgs := `[{"content":"You are careful.","role":"system"},{"content":"Read a.txt","role":"user"},` +
		`{"content":"Listing first.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"dir\":\".\"}","name":"list"},"id":"step_0","type":"function"}]},` +
		`{"content":"[\"a.txt\"]","role":"tool","tool_call_id":"step_0"}]`
	if got, _ := json.Marshal(b["messages"]); string(got) != wantMsgs {
		t.Errorf("messages =\n%s\nwant\n%s", got, wantMsgs)
	}
	wantTools := `[{"function":{"description":"Reads a file.","name":"read_file","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},"type":"function"},` +
		`{"function":{"description":"Lists.","name":"list","parameters":{"properties":{},"type":"object"}},"type":"function"}]`
	if got, _ := json.Marshal(b["tools"]); string(got) != wantTools {
		t.Errorf("tools =\n%s\nwant\n%s", got, wantTools)
	}
}

// Arguments that are not valid JSON come back verbatim for the driver to
// record as invalid.
func TestGenerate_InvalidArgumentsAreKeptVerbatim(t *testing.T) {
	f := serve(t, 200, nil, completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"x","arguments":"{\"a\": 1,"}}]}`, "tool_calls", okUsage))
	resp, err := newModel(t, f.URL, "").Generate(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolUses) != 1 || string(resp.ToolUses[0].Args) != `{"a": 1,` {
		t.Fatalf("resp = %+v", resp)
	}
	if _, ok := f.Header(0)["Authorization"]; ok {
		t.Fatal("no key must send no Authorization header")
	}
}

// A reply cut off by the cap or refused keeps its text and usage and drops
// its tool uses.
func TestGenerate_FinishReasonsMapAndDropPartialCalls(t *testing.T) {
	call := `"tool_calls":[{"id":"c1","type":"function","function":{"name":"rm","arguments":"{\"path\":\"/\"}"}}]`
	cases := []struct {
		message, finish, stop, text string
	}{
		{`{"role":"assistant","content":"partial",` + call + `}`, "length", agentrt.StopMaxTokens, "partial"},
		{`{"role":"assistant","content":null,` + call + `}`, "content_filter", agentrt.StopRefusal, ""},
		{`{"role":"assistant","content":null,"refusal":"I can't help with that.",` + call + `}`, "stop", agentrt.StopRefusal, "I can't help with that."},
		{`{"role":"assistant","content":"odd"}`, "something_new", "something_new", "odd"},
		{`{"role":"assistant","content":null,` + call + `}`, "stop", agentrt.StopToolUse, ""},
	}
	for _, c := range cases {
		f := serve(t, 200, nil, completion(c.message, c.finish, okUsage))
		resp, err := newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
		if err != nil {
			t.Fatalf("%s: %v", c.finish, err)
		}
		if resp.StopReason != c.stop || resp.Text != c.text || resp.Usage.InputTokens != 19 {
			t.Errorf("%s: resp = %+v", c.finish, resp)
		}
		wantUses := 0
		if c.stop == agentrt.StopToolUse {
			wantUses = 1
		}
		if len(resp.ToolUses) != wantUses {
			t.Errorf("%s: %d tool uses, want %d", c.finish, len(resp.ToolUses), wantUses)
		}
	}
}

// Statuses and unusable bodies are classified; the key is in no error.
func TestGenerate_ErrorsClassified(t *testing.T) {
	served := []string{
		`{"error":{"message":"boom"},"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":"nope","usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":[{"message":{"content":7},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"x","arguments":7}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
	}
	for _, body := range served {
		f := serve(t, 200, nil, body)
		_, err := newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage.InputTokens != 3 || !errors.Is(err, providers.ErrUnusableReply) || errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("%s: %v, want a ServedError charging the reported usage", body, err)
		}
	}

	f := serve(t, 200, nil, `{}`)
	_, err := newModel(t, f.URL, testKey).Generate(context.Background(), agentrt.ModelRequest{Messages: []agentrt.Message{{Role: "system"}}})
	if !errors.Is(err, providers.ErrBadRequest) {
		t.Fatalf("bad role: %v", err)
	}
}

// The documented variables are read, and the default endpoint gets
// max_completion_tokens.
func TestFromEnv_SendsTheCapFieldTheRootReads(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_MODEL", "gpt-env")
	if m, err := FromEnv(); err != nil || m.maxField != "max_completion_tokens" {
		t.Fatalf("model = %v, %v", m, err)
	}
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/")
	if m, err := FromEnv(); err != nil || m.maxField != "max_tokens" {
		t.Fatalf("model = %v, %v", m, err)
	}
}
