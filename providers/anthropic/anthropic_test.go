package anthropic

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

const testKey = "sk-ant-api03-test-0123456789abcdef"

// fakeAPI is a loopback Messages API server that records what it receives
// and answers with a canned status, headers and body.
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

func newModel(t *testing.T, base string) *Model {
	t.Helper()
	m, err := New(Config{BaseURL: base, APIKey: providers.NewSecret(testKey), Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func message(content, stop, usage string) string {
	return fmt.Sprintf(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":%s,"stop_reason":%s,"stop_sequence":null,"usage":%s}`, content, stop, usage)
}

const okUsage = `{"input_tokens":20,"output_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`

func simpleRequest() agentrt.ModelRequest {
	return agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
}

// New requires a model, a key for the default endpoint, and names itself.
func TestNew_RequiresAModelAndNamesItself(t *testing.T) {
	if _, err := New(Config{APIKey: providers.NewSecret(testKey)}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("no model: %v", err)
	}
	if _, err := New(Config{Model: "m"}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("no key for the default endpoint: %v", err)
	}
	if _, err := New(Config{Model: "m", APIKey: providers.NewSecret(testKey), MaxOutputTokens: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative cap: %v", err)
	}
	m, err := New(Config{Model: "claude-x", APIKey: providers.NewSecret(testKey)})
	if err != nil || m.Name() != "claude-x" || m.endpoint != DefaultBaseURL+"/v1/messages" {
		t.Fatalf("model = %v, %v", m, err)
	}
	if m, _ = New(Config{Model: "claude-x", APIKey: providers.NewSecret(testKey), Name: "anthropic:claude-x"}); m.Name() != "anthropic:claude-x" {
		t.Fatalf("name override = %q", m.Name())
	}
}

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
	h := f.headers[0]
	if h.Get("x-api-key") != testKey || h.Get("anthropic-version") != APIVersion || h.Get("Authorization") != "" {
		t.Fatalf("headers = %v", h)
	}
	if f.paths[0] != "POST /v1/messages" {
		t.Fatalf("path = %q", f.paths[0])
	}
	b := f.body(t, 0)
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
	b := f.body(t, 0)
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

// Statuses and unusable bodies are classified; the key is in no error.
func TestGenerate_ErrorsClassified(t *testing.T) {
	f := serve(t, 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+testKey+`"}}`)
	_, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	var se *providers.StatusError
	var te *agentrt.TransientError
	if !errors.As(err, &se) || se.Status != 401 || errors.As(err, &te) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("401: %v", err)
	}
	for _, status := range []int{409, 500, 529} {
		f = serve(t, status, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		if _, err = newModel(t, f.URL).Generate(context.Background(), simpleRequest()); !errors.As(err, &te) {
			t.Fatalf("%d: %v, want transient", status, err)
		}
	}
	f = serve(t, 200, nil, `{"type":"message","content":"nope","usage":{"input_tokens":4,"output_tokens":0}}`)
	_, err = newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	var sv *agentrt.ServedError
	if !errors.As(err, &sv) || sv.Usage.InputTokens != 4 || !errors.Is(err, providers.ErrUnusableReply) {
		t.Fatalf("bad content: %v", err)
	}
	f = serve(t, 200, nil, `not json`)
	_, err = newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Fatalf("undecodable: %v", err)
	}
	bad := agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{{Type: agentrt.BlockToolUse, ToolUseID: "x", Name: "t", Input: json.RawMessage(`[1]`)}}}}}
	if _, err = newModel(t, f.URL).Generate(context.Background(), bad); !errors.Is(err, providers.ErrBadRequest) {
		t.Fatalf("non-object input: %v", err)
	}
	if f.requests() != 1 {
		t.Fatalf("a request that cannot be expressed was sent (%d requests)", f.requests())
	}
}

// A 429 is transient and carries Retry-After.
func TestGenerate_RateLimitCarriesRetryAfter(t *testing.T) {
	f := serve(t, 429, http.Header{"Retry-After": {"30"}}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
	_, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
	var te *agentrt.TransientError
	if !errors.As(err, &te) || te.RetryAfter != 30*time.Second || f.requests() != 1 {
		t.Fatalf("err = %v (requests %d)", err, f.requests())
	}
}

// A redirect is not followed: the target receives nothing and no error
// repeats the key or the target's path and query.
func TestGenerate_RedirectIsRefusedAndTheKeyStaysHome(t *testing.T) {
	target := serve(t, 200, nil, message(`[{"type":"text","text":"stolen"}]`, `"end_turn"`, okUsage))
	for _, status := range []int{301, 302, 303, 307, 308} {
		loc := target.URL + "/collect?k=" + testKey
		origin := serve(t, status, http.Header{"Location": {loc}}, `<a href="`+loc+`">moved</a>`)
		_, err := newModel(t, origin.URL).Generate(context.Background(), simpleRequest())
		var re *providers.RedirectError
		if !errors.As(err, &re) || re.Host != strings.TrimPrefix(target.URL, "http://") {
			t.Fatalf("%d: err = %v, want a RedirectError naming the target host", status, err)
		}
		for _, leak := range []string{testKey, "collect", "k="} {
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("%d: error %q leaks %q", status, err, leak)
			}
		}
	}
	if n := target.requests(); n != 0 {
		t.Fatalf("the redirect target received %d request(s)", n)
	}
}

// Usage that cannot be believed is a ServedError with zero usage wrapping
// ErrUnusableUsage.
func TestGenerate_UnusableUsageIsChargedNothing(t *testing.T) {
	for _, usage := range []string{
		`{"input_tokens":-1,"output_tokens":7}`,
		`{"input_tokens":20,"output_tokens":-7}`,
		`{"input_tokens":2.5,"output_tokens":7}`,
		`{"input_tokens":2e1,"output_tokens":7}`,
		`{"input_tokens":"20","output_tokens":7}`,
		`{"input_tokens":99999999999999999999,"output_tokens":7}`,
		`{"input_tokens":9223372036854775807,"output_tokens":7,"cache_read_input_tokens":9223372036854775807}`,
		`{"input_tokens":1,"output_tokens":7,"cache_creation_input_tokens":9223372036854775000}`,
		`{"input_tokens":1,"output_tokens":7,"cache_read_input_tokens":-3}`,
		`[]`,
	} {
		f := serve(t, 200, nil, message(`[{"type":"text","text":"hi"}]`, `"end_turn"`, usage))
		resp, err := newModel(t, f.URL).Generate(context.Background(), simpleRequest())
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("usage %s: resp=%+v err=%v", usage, resp, err)
		}
	}
}

// Neither Config nor Model shows the key in any encoding, nor does any
// encoding of a struct, slice or map holding one in an exported or
// unexported field, by value or by pointer; errors never repeat it.
func TestConfigAndModel_EncodeWithoutTheKey(t *testing.T) {
	cfg := Config{APIKey: providers.NewSecret(testKey), Model: "claude-test", HTTPClient: &http.Client{}}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, v := range leaktest.Holders(cfg, m) {
		outs = append(outs, leaktest.Encodings(t, v.V, v.Must...)...)
	}
	if _, err := New(Config{BaseURL: "http://api.example.com", APIKey: providers.NewSecret(testKey), Model: "m"}); err == nil {
		t.Fatal("a key over plain http to a remote host must be refused")
	} else {
		outs = append(outs, err.Error())
	}
	f := serve(t, 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"bad key `+testKey+`"}}`)
	_, err = newModel(t, f.URL).Generate(context.Background(), simpleRequest())
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

// A key over plain http goes only to a loopback host.
func TestNew_RefusesAKeyOverPlainHTTPToARemoteHost(t *testing.T) {
	for _, base := range []string{"http://api.example.com", "http://192.168.0.9:8080", "ftp://localhost"} {
		if _, err := New(Config{BaseURL: base, APIKey: providers.NewSecret(testKey), Model: "m"}); !errors.Is(err, providers.ErrEndpoint) {
			t.Errorf("%s: %v, want ErrEndpoint", base, err)
		}
	}
	if _, err := New(Config{BaseURL: "http://[::1]:8080/", APIKey: providers.NewSecret(testKey), Model: "m"}); err != nil {
		t.Errorf("loopback: %v", err)
	}
}

// The documented variables are read.
func TestFromEnv_ReadsTheDocumentedVariables(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
	t.Setenv("ANTHROPIC_MODEL", "claude-env")
	m, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "claude-env" || m.endpoint != "http://127.0.0.1:9/v1/messages" || m.key.Reveal() != testKey {
		t.Fatalf("model = %v", m)
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
	got, _ := json.Marshal(f.body(t, 0)["messages"].([]any)[2])
	want := `{"content":[{"content":[{"text":"the screen","type":"text"},{"source":{"data":"cG5nIGJ5dGVz","media_type":"image/png","type":"base64"},"type":"image"}],"tool_use_id":"step_0","type":"tool_result"}],"role":"user"}`
	if string(got) != want {
		t.Fatalf("tool result =\n%s\nwant\n%s", got, want)
	}
}
