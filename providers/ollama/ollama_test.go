package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/internal/leaktest"
)

const testKey = "ollama-key-0123456789abcdef"

// fakeAPI is a loopback /api/chat server that records what it receives and
// answers with a canned status, headers and body.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func serve(t *testing.T, status int, header http.Header, body string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, b)
		f.headers = append(f.headers, r.Header.Clone())
		f.paths = append(f.paths, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func newModel(t *testing.T, base, key string) *Model {
	t.Helper()
	m, err := New(Config{BaseURL: base, APIKey: providers.NewSecret(key), Model: "llama-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func chat(message, doneReason, counts string) string {
	return fmt.Sprintf(`{"model":"llama-test","created_at":"2026-01-01T00:00:00Z","message":%s,"done_reason":%q,"done":true,"total_duration":5191566416,"load_duration":2154458,%s}`,
		message, doneReason, counts)
}

const okCounts = `"prompt_eval_count":26,"prompt_eval_duration":383809000,"eval_count":298,"eval_duration":4799921000`

func simpleRequest() agentrt.ModelRequest {
	return agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
}

// New requires a model; Host normalises OLLAMA_HOST forms.
func TestNew_RequiresAModelAndNormalisesTheHost(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("no model: %v", err)
	}
	if _, err := New(Config{Model: "m", NumCtx: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative NumCtx: %v", err)
	}
	m, err := New(Config{Model: "qwen3"})
	if err != nil || m.Name() != "qwen3" || m.endpoint != DefaultBaseURL+"/api/chat" {
		t.Fatalf("model = %v, %v", m, err)
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
	if _, err := New(Config{Model: "m", BaseURL: Host("file:///tmp/x")}); !errors.Is(err, providers.ErrEndpoint) {
		t.Errorf("file URL: %v", err)
	}
	if _, err := New(Config{Model: "m", BaseURL: "http://10.0.0.2:11434", APIKey: providers.NewSecret(testKey)}); !errors.Is(err, providers.ErrEndpoint) {
		t.Errorf("key over plain http to a remote host: %v", err)
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
	if f.paths[0] != "POST /api/chat" || f.headers[0].Get("Authorization") != "" {
		t.Fatalf("request = %s %v", f.paths[0], f.headers[0])
	}
	want := `{"model":"llama-test","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_ctx":32768}}`
	if got := string(f.bodies[0]); got != want {
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
	if f.headers[0].Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", f.headers[0].Get("Authorization"))
	}
	want := `{"model":"llama-test","messages":[{"role":"system","content":"sys"},{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":"Checking.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
		`{"role":"tool","content":"{\"temp\":20}","tool_name":"get_weather"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
		`"stream":false,"options":{"num_ctx":32768,"num_predict":100}}`
	if got := string(f.bodies[0]); got != want {
		t.Fatalf("body =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(string(f.bodies[0]), "tool_choice") {
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

// A 429 is transient and carries Retry-After.
func TestGenerate_RetryAfterIsCarried(t *testing.T) {
	f := serve(t, 429, http.Header{"Retry-After": {"5"}}, `{"error":"too many requests"}`)
	_, err := newModel(t, f.URL, "").Generate(context.Background(), simpleRequest())
	var te *agentrt.TransientError
	if !errors.As(err, &te) || te.RetryAfter != 5*time.Second || f.requests() != 1 {
		t.Fatalf("err = %v", err)
	}
}

// A redirect is not followed and the key stays home.
func TestGenerate_RedirectIsRefusedAndTheKeyStaysHome(t *testing.T) {
	target := serve(t, 200, nil, chat(`{"role":"assistant","content":"stolen"}`, "stop", okCounts))
	loc := target.URL + "/api/collect?k=" + testKey
	origin := serve(t, http.StatusPermanentRedirect, http.Header{"Location": {loc}}, loc)
	_, err := newModel(t, origin.URL, testKey).Generate(context.Background(), simpleRequest())
	var re *providers.RedirectError
	if !errors.As(err, &re) || re.Host != strings.TrimPrefix(target.URL, "http://") {
		t.Fatalf("err = %v", err)
	}
	for _, leak := range []string{testKey, "collect"} {
		if strings.Contains(err.Error(), leak) {
			t.Fatalf("error %q leaks %q", err, leak)
		}
	}
	if target.requests() != 0 {
		t.Fatal("the redirect target received a request")
	}
}

// Counts that cannot be believed give a zero-usage ServedError.
func TestGenerate_UnusableUsageIsChargedNothing(t *testing.T) {
	for _, counts := range []string{
		`"prompt_eval_count":-1,"eval_count":3`,
		`"prompt_eval_count":1.5,"eval_count":3`,
		`"prompt_eval_count":2,"eval_count":1e2`,
		`"prompt_eval_count":99999999999999999999,"eval_count":3`,
		`"prompt_eval_count":"2","eval_count":3`,
	} {
		resp, err := newModel(t, serve(t, 200, nil, chat(`{"role":"assistant","content":"x"}`, "stop", counts)).URL, "").Generate(context.Background(), simpleRequest())
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("%s: resp=%+v err=%v", counts, resp, err)
		}
	}
}

// The documented variables are read, and the key is redacted.
func TestFromEnv_ReadsTheDocumentedVariables(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "127.0.0.1:11500")
	t.Setenv("OLLAMA_MODEL", "qwen3")
	t.Setenv("OLLAMA_API_KEY", testKey)
	m, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if m.endpoint != "http://127.0.0.1:11500/api/chat" || m.Name() != "qwen3" || m.key.Reveal() != testKey {
		t.Fatalf("model = %v", m)
	}
	j, _ := json.Marshal(ConfigFromEnv())
	for _, s := range []string{fmt.Sprintf("%+v", ConfigFromEnv()), fmt.Sprintf("%#v", m), string(j)} {
		if strings.Contains(s, testKey) {
			t.Fatalf("the key shows: %s", s)
		}
	}
}

// Neither Config nor Model shows the key in any encoding, nor does any
// encoding of a struct, slice or map holding one in an exported or
// unexported field, by value or by pointer; errors never repeat it.
func TestConfigAndModel_EncodeWithoutTheKey(t *testing.T) {
	cfg := Config{BaseURL: "https://ollama.example.com", APIKey: providers.NewSecret(testKey), Model: "llama-test", HTTPClient: &http.Client{}}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, v := range leaktest.Holders(cfg, m) {
		outs = append(outs, leaktest.Encodings(t, v.V, v.Must...)...)
	}
	if _, err := New(Config{BaseURL: "http://ollama.example.com", APIKey: providers.NewSecret(testKey), Model: "m"}); err == nil {
		t.Fatal("a key over plain http to a remote host must be refused")
	} else {
		outs = append(outs, err.Error())
	}
	f := serve(t, 401, nil, `{"error":"bad key `+testKey+`"}`)
	_, err = newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
	outs = append(outs, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
	if o := leaktest.Leak(outs, testKey); o != "" {
		t.Fatalf("an encoding shows the key: %s", o)
	}
	if o := leaktest.Leak(outs, "0123456789abcdef"); o != "" {
		t.Fatalf("an encoding shows part of the key: %s", o)
	}
	if m.key.Reveal() != testKey {
		t.Fatal("the model no longer holds the key it sends")
	}
	if !strings.Contains(cfg.String(), `APIKey:"[redacted]"`) || !strings.Contains(m.String(), `APIKey:"[redacted]"`) {
		t.Fatalf("the key's presence should show redacted: %s / %s", cfg, m)
	}
}
