package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/internal/adaptertest"
)

const testKey = "ollama-key-0123456789abcdef"

func newModel(t *testing.T, base, key string) *Model {
	t.Helper()
	return adaptertest.Open(t, New, Config{Endpoint: providers.Endpoint{BaseURL: base, APIKey: providers.NewSecret(key), Model: "llama-test"}})
}

func chat(message, doneReason, counts string) string {
	return fmt.Sprintf(`{"model":"llama-test","created_at":"2026-01-01T00:00:00Z","message":%s,"done_reason":%q,"done":true,"total_duration":5191566416,"load_duration":2154458,%s}`,
		message, doneReason, counts)
}

var (
	serve         = adaptertest.Serve
	simpleRequest = adaptertest.SimpleRequest
)

const okCounts = `"prompt_eval_count":26,"prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000`

// New refuses a negative NumCtx; Host normalises OLLAMA_HOST forms.
func TestNew_RequiresAModelAndNormalisesTheHost(t *testing.T) {
	if _, err := New(Config{Endpoint: providers.Endpoint{Model: "m"}, NumCtx: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative NumCtx: %v", err)
	}
	for in, want := range map[string]string{
		"":                       DefaultBaseURL,
		":11500":                 "http://127.0.0.1:11500",
		"localhost:11434":        "http://localhost:11434",
		"https://ollama.com/":    "https://ollama.com",
		"http://10.0.0.2:11434/": "http://10.0.0.2:11434",
	} {
		if got := Host(in); got != want {
			t.Errorf("Host(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := New(Config{Endpoint: providers.Endpoint{Model: "m", BaseURL: Host("file:///tmp/x")}}); !errors.Is(err, providers.ErrEndpoint) {
		t.Errorf("file URL: %v", err)
	}
}

// A text reply maps to end_turn with usage from the eval counts; the request
// carries stream:false, num_ctx, and no tools.
func TestGenerate_TextReply(t *testing.T) {
	f := serve(t, 200, nil, chat(`{"role":"assistant","content":"Hello!"}`, "stop", okCounts))
	resp, err := newModel(t, f.URL, "").Generate(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello!" || resp.StopReason != agentrt.StopEndTurn || resp.Usage != (agentrt.Usage{InputTokens: 26, OutputTokens: 298}) {
		t.Fatalf("resp = %+v", resp)
	}
	if f.Path(0) != "POST /api/chat" || f.Header(0).Get("Authorization") != "" {
		t.Fatalf("request = %s %v", f.Path(0), f.Header(0))
	}
	want := `{"model":"llama-test","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_ctx":32768}}`
	if got := f.RawBody(0); got != want {
		t.Fatalf("body =\n%s\nwant\n%s", got, want)
	}
}

// A tool call reply maps to tool_use; the request carries the history with
// the tool call and a tool message named after its tool, and the tools.
func TestGenerate_MapsRequestAndToolCalls(t *testing.T) {
	f := serve(t, 200, nil, chat(`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Toronto","big":12345678901234567890}}}]}`, "stop", okCounts))
	req := agentrt.ModelRequest{
		System: "sys",
		Messages: []agentrt.Message{
			{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Weather?"}}},
			{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Checking."}, {Type: agentrt.BlockToolUse, ToolUseID: "step_0", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
			{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolResult, ToolUseID: "step_0", Content: `{"temp":20}`}}},
		},
		Tools:           []agentrt.ToolSpec{{Name: "get_weather", Description: "Weather.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		MaxOutputTokens: 100,
	}
	resp, err := newModel(t, f.URL, testKey).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != agentrt.StopToolUse || len(resp.ToolUses) != 1 || resp.ToolUses[0].Name != "get_weather" ||
		string(resp.ToolUses[0].Args) != `{"city":"Toronto","big":12345678901234567890}` || resp.ToolUses[0].ID == "" {
		t.Fatalf("resp = %+v", resp)
	}
	if f.Header(0).Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", f.Header(0).Get("Authorization"))
	}
	want := `{"model":"llama-test","messages":[{"role":"system","content":"sys"},{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":"Checking.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
		`{"role":"tool","content":"{\"temp\":20}","tool_name":"get_weather"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
		`"stream":false,"options":{"num_ctx":32768,"num_predict":100}}`
	if got := f.RawBody(0); got != want {
		t.Fatalf("body =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(f.RawBody(0), "tool_choice") {
		t.Fatal("tool_choice must be absent")
	}
}

// done_reason length is max_tokens and drops the tool call; Ollama has no
// refusal, so another done_reason passes through.
func TestGenerate_StopReasonsMapToTheRuntimeVocabulary(t *testing.T) {
	call := `{"role":"assistant","content":"part","tool_calls":[{"function":{"name":"rm","arguments":{"path":"/"}}}]}`
	resp, err := newModel(t, serve(t, 200, nil, chat(call, "length", okCounts)).URL, "").Generate(context.Background(), simpleRequest())
	if err != nil || resp.StopReason != agentrt.StopMaxTokens || len(resp.ToolUses) != 0 || resp.Text != "part" || resp.Usage.OutputTokens != 298 {
		t.Fatalf("length: %+v, %v", resp, err)
	}
	resp, err = newModel(t, serve(t, 200, nil, chat(`{"role":"assistant","content":"x"}`, "unload", okCounts)).URL, "").Generate(context.Background(), simpleRequest())
	if err != nil || resp.StopReason != "unload" {
		t.Fatalf("unload: %+v, %v", resp, err)
	}
}

// Statuses and unusable bodies are classified.
func TestGenerate_ErrorsClassified(t *testing.T) {
	_, err := newModel(t, serve(t, 404, nil, `{"error":"model 'llama-test' not found"}`).URL, "").Generate(context.Background(), simpleRequest())
	var se *providers.StatusError
	var te *agentrt.TransientError
	if !errors.As(err, &se) || se.Status != 404 || errors.As(err, &te) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("404: %v", err)
	}
	if _, err = newModel(t, serve(t, 500, nil, `{"error":"llama runner process has terminated"}`).URL, "").Generate(context.Background(), simpleRequest()); !errors.As(err, &te) {
		t.Fatalf("500: %v", err)
	}
	_, err = newModel(t, serve(t, 200, nil, `{"error":"out of memory","prompt_eval_count":5}`).URL, "").Generate(context.Background(), simpleRequest())
	var sv *agentrt.ServedError
	if !errors.As(err, &sv) || sv.Usage.InputTokens != 5 || !errors.Is(err, providers.ErrUnusableReply) {
		t.Fatalf("error in a 200: %v", err)
	}
	_, err = newModel(t, serve(t, 200, nil, `{"message":"nope","prompt_eval_count":5}`).URL, "").Generate(context.Background(), simpleRequest())
	if !errors.As(err, &sv) || sv.Usage.InputTokens != 5 {
		t.Fatalf("wrong shape: %v", err)
	}
}
