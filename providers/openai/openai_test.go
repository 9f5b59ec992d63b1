package openai

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

const testKey = "sk-test-0123456789abcdef"

// fakeAPI is a loopback Chat Completions server that records what it
// receives and answers with a canned status, headers and body.
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
		w.Header().Set("Content-Type", "application/json")
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

func (f *fakeAPI) body(t *testing.T, i int) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(f.bodies[i], &m); err != nil {
		t.Fatalf("request body %d is not JSON: %v", i, err)
	}
	return m
}

func newModel(t *testing.T, base, key string) *Model {
	t.Helper()
	m, err := New(Config{BaseURL: base + "/v1", APIKey: providers.NewSecret(key), Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func completion(message, finish, usage string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-test",
"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":%s}`, message, finish, usage)
}

const okUsage = `{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":4}}`

func simpleRequest() agentrt.ModelRequest {
	return agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
}

// New requires a model and names itself after it unless Name is set.
func TestNew_RequiresAModelAndNamesItself(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("no model: %v", err)
	}
	if _, err := New(Config{Model: "m", MaxOutputTokens: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative cap: %v", err)
	}
	m, err := New(Config{Model: "gpt-x"})
	if err != nil || m.Name() != "gpt-x" {
		t.Fatalf("name = %v, %v", m, err)
	}
	m, _ = New(Config{Model: "gpt-x", Name: "openai:gpt-x"})
	if m.Name() != "openai:gpt-x" {
		t.Fatalf("name override = %q", m.Name())
	}
}

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
	if got := f.headers[0].Get("Authorization"); got != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", got)
	}
	if f.paths[0] != "POST /v1/chat/completions" {
		t.Fatalf("path = %q", f.paths[0])
	}
	b := f.body(t, 0)
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

	b := f.body(t, 0)
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
	if _, ok := f.headers[0]["Authorization"]; ok {
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
	echo := `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`
	f := serve(t, 401, nil, echo)
	_, err := newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
	var se *providers.StatusError
	var te *agentrt.TransientError
	if !errors.As(err, &se) || se.Status != 401 || errors.As(err, &te) {
		t.Fatalf("401: %v", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("401 error repeats the key: %q", err)
	}

	f = serve(t, 503, nil, `{"error":{"message":"overloaded"}}`)
	if _, err = newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest()); !errors.As(err, &te) {
		t.Fatalf("503: %v, want transient", err)
	}

	served := []string{
		`{"error":{"message":"boom"},"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":"nope","usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":[{"message":{"content":7},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"x","arguments":7}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}`,
	}
	for _, body := range served {
		f = serve(t, 200, nil, body)
		_, err = newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage.InputTokens != 3 || !errors.Is(err, providers.ErrUnusableReply) || errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("%s: %v, want a ServedError charging the reported usage", body, err)
		}
	}

	f = serve(t, 200, nil, `<html>not json</html>`)
	_, err = newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
	var sv *agentrt.ServedError
	if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Fatalf("undecodable: %v, want a zero-usage ServedError the caller charges its estimate", err)
	}

	_, err = newModel(t, f.URL, testKey).Generate(context.Background(), agentrt.ModelRequest{Messages: []agentrt.Message{{Role: "system"}}})
	if !errors.Is(err, providers.ErrBadRequest) {
		t.Fatalf("bad role: %v", err)
	}
}

// A 429 is transient and carries Retry-After.
func TestGenerate_RateLimitCarriesRetryAfter(t *testing.T) {
	f := serve(t, 429, http.Header{"Retry-After": {"12"}}, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	_, err := newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
	var te *agentrt.TransientError
	if !errors.As(err, &te) || te.RetryAfter != 12*time.Second {
		t.Fatalf("err = %v, want transient with RetryAfter 12s", err)
	}
	if f.requests() != 1 {
		t.Fatalf("the adapter retried: %d requests", f.requests())
	}
}

// A redirect is not followed: the target receives nothing and no error
// repeats the key or the target's path and query.
func TestGenerate_RedirectIsRefusedAndTheKeyStaysHome(t *testing.T) {
	target := serve(t, 200, nil, completion(`{"role":"assistant","content":"stolen"}`, "stop", okUsage))
	for _, status := range []int{301, 302, 307, 308} {
		origin := serve(t, status, http.Header{"Location": {target.URL + "/collect?k=" + testKey}}, `<a href="`+target.URL+`/collect?k=`+testKey+`">moved</a>`)
		_, err := newModel(t, origin.URL, testKey).Generate(context.Background(), simpleRequest())
		var re *providers.RedirectError
		if !errors.As(err, &re) || re.Host != strings.TrimPrefix(target.URL, "http://") {
			t.Fatalf("%d: err = %v, want a RedirectError naming the target host", status, err)
		}
		for _, leak := range []string{testKey, "collect", "k="} {
			if strings.Contains(err.Error(), leak) || strings.Contains(fmt.Sprintf("%+v", err), leak) {
				t.Fatalf("%d: error %q leaks %q", status, err, leak)
			}
		}
	}
	if n := target.requests(); n != 0 {
		t.Fatalf("the redirect target received %d request(s)", n)
	}
}

// Usage that cannot be believed is a ServedError with zero usage wrapping
// ErrUnusableUsage, so the caller charges its estimate instead.
func TestGenerate_UnusableUsageIsChargedNothing(t *testing.T) {
	for _, usage := range []string{
		`{"prompt_tokens":-5,"completion_tokens":10}`,
		`{"prompt_tokens":5,"completion_tokens":-1}`,
		`{"prompt_tokens":5.5,"completion_tokens":10}`,
		`{"prompt_tokens":1e3,"completion_tokens":10}`,
		`{"prompt_tokens":"5","completion_tokens":10}`,
		`{"prompt_tokens":99999999999999999999999,"completion_tokens":10}`,
		`{"prompt_tokens":5,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":6}}`,
		`{"prompt_tokens":5,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":-1}}`,
		`"lots"`,
	} {
		f := serve(t, 200, nil, completion(`{"role":"assistant","content":"hi"}`, "stop", usage))
		resp, err := newModel(t, f.URL, testKey).Generate(context.Background(), simpleRequest())
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("usage %s: resp=%+v err=%v, want a zero-usage ServedError matching ErrUnusableUsage", usage, resp, err)
		}
	}
}

// Neither Config nor Model shows the key in any encoding, nor does any
// encoding of a struct, slice or map holding one in an exported or
// unexported field, by value or by pointer; errors never repeat it.
func TestConfigAndModel_EncodeWithoutTheKey(t *testing.T) {
	cfg := Config{BaseURL: "https://api.example.com/v1", APIKey: providers.NewSecret(testKey), Model: "gpt-test", HTTPClient: &http.Client{}}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, v := range append(leaktest.Holders(cfg, m), leaktest.Value{V: struct{ K providers.Secret }{cfg.APIKey}, Must: []string{"json", "gob", "template"}}) {
		outs = append(outs, leaktest.Encodings(t, v.V, v.Must...)...)
	}
	_, err = New(Config{BaseURL: "http://example.com/v1", APIKey: providers.NewSecret(testKey), Model: "m"})
	if err == nil {
		t.Fatal("a key over plain http to a remote host must be refused")
	}
	outs = append(outs, err.Error())
	if o := leaktest.Leak(outs, testKey); o != "" {
		t.Fatalf("an encoding shows the key: %s", o)
	}
	if o := leaktest.Leak(outs, "0123456789abcdef"); o != "" {
		t.Fatalf("an encoding shows part of the key: %s", o)
	}
	if !strings.Contains(cfg.String(), providers.Redacted) || !strings.Contains(m.String(), providers.Redacted) {
		t.Fatalf("the key's presence should show as %s: %s / %s", providers.Redacted, cfg, m)
	}
	var back map[string]any
	j, _ := json.Marshal(cfg)
	if err := json.Unmarshal(j, &back); err != nil || back["APIKey"] != providers.Redacted || back["HTTPClient"] != true {
		t.Fatalf("json = %s", j)
	}
	if m.key.Reveal() != testKey {
		t.Fatal("the model no longer holds the key it sends")
	}
}

// A key over plain http goes only to a loopback host.
func TestNew_RefusesAKeyOverPlainHTTPToARemoteHost(t *testing.T) {
	for _, base := range []string{"http://api.example.com/v1", "http://10.0.0.2:8000/v1", "http://localhost.:8000"} {
		if _, err := New(Config{BaseURL: base, APIKey: providers.NewSecret(testKey), Model: "m"}); !errors.Is(err, providers.ErrEndpoint) {
			t.Errorf("%s: %v, want ErrEndpoint", base, err)
		}
	}
	for _, base := range []string{"http://localhost:8000/v1", "http://127.0.0.1:8000/v1", "https://api.example.com/v1"} {
		if _, err := New(Config{BaseURL: base, APIKey: providers.NewSecret(testKey), Model: "m"}); err != nil {
			t.Errorf("%s: %v", base, err)
		}
	}
	if _, err := New(Config{BaseURL: "http://10.0.0.2:8000/v1", Model: "m"}); err != nil {
		t.Errorf("no key over http: %v", err)
	}
}

// The documented variables are read, and the default endpoint gets
// max_completion_tokens.
func TestFromEnv_ReadsTheDocumentedVariables(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_MODEL", "gpt-env")
	m, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "gpt-env" || m.baseURL != DefaultBaseURL || m.key.Reveal() != testKey || m.maxField != "max_completion_tokens" {
		t.Fatalf("model = %v", m)
	}
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/")
	if m, err = FromEnv(); err != nil || m.endpoint != "http://127.0.0.1:8080/v1/chat/completions" || m.maxField != "max_tokens" {
		t.Fatalf("model = %v, %v", m, err)
	}
}
