// Package adaptertest is the one table-driven harness every model adapter
// runs: what is the same for every adapter (its Config's checks, a text
// reply, error classification, rate limits, redirects, usage that cannot
// be believed, encodings without the key, the environment) is tested here
// once, from a description of the adapter's wire format. An adapter's own
// tests keep only what its wire format alone does.
package adaptertest

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

// Adapter describes one adapter to the harness.
type Adapter[C any, M agentrt.Model] struct {
	// Provider is the adapter's package name; Model.Provider returns it.
	Provider string
	// Key is a key shaped like the provider's; it must end in
	// "0123456789abcdef", so a leak of part of it is found too.
	Key string
	// Path is what the adapter appends to the base URL.
	Path string
	// DefaultBaseURL is the adapter's default root.
	DefaultBaseURL string
	// KeyRequired says New refuses DefaultBaseURL without a key.
	KeyRequired bool
	// Config builds the adapter's Config around the Endpoint e.
	Config func(e providers.Endpoint) C
	// New is the adapter's New.
	New func(C) (M, error)
	// SentKey is the key as a request's header carried it.
	SentKey func(h http.Header) string
	// Reply is a 2xx body whose text is text, ending the turn, with usage
	// in the provider's shape (usage is the JSON the provider nests, or
	// the fields it spreads, as Usage and BadUsages hold them).
	Reply func(text, usage string) string
	// Usage is usage of 20 input and 7 output tokens.
	Usage string
	// BadUsages are usages the adapter must not believe.
	BadUsages []string
	// ErrorBody is an error reply carrying message.
	ErrorBody func(message string) string
	// EnvKey, EnvBaseURL and EnvModel are the variables FromEnv reads.
	EnvKey, EnvBaseURL, EnvModel string
	// FromEnv is the adapter's FromEnv.
	FromEnv func() (M, error)
}

// Contract is an Adapter with its types hidden, so one table can hold
// every adapter.
type Contract interface {
	// Name is the adapter's provider name.
	Name() string
	// Run runs every shared test, each a subtest named for its behaviour.
	Run(t *testing.T)
	// RunOne runs the shared test called name (a seed names some of them
	// as tests of their own); an unknown name fails.
	RunOne(t *testing.T, name string)
}

// Name is a.Provider.
func (a Adapter[C, M]) Name() string { return a.Provider }

// Run runs the shared tests on a, each a subtest named for its behaviour.
func (a Adapter[C, M]) Run(t *testing.T) {
	for _, c := range cases[C, M]() {
		t.Run(c.name, func(t *testing.T) { c.f(t, a) })
	}
}

// RunOne runs the shared test called name on a; an unknown name fails.
func (a Adapter[C, M]) RunOne(t *testing.T, name string) {
	for _, c := range cases[C, M]() {
		if c.name == name {
			c.f(t, a)
			return
		}
	}
	t.Fatalf("no shared adapter test is called %q", name)
}

type adapterCase[C any, M agentrt.Model] struct {
	name string
	f    func(*testing.T, Adapter[C, M])
}

func cases[C any, M agentrt.Model]() []adapterCase[C, M] {
	return []adapterCase[C, M]{
		{"NewRequiresAModelAndNamesItself", newRequiresAModel[C, M]},
		{"NewRefusesAKeyOverPlainHTTPToARemoteHost", newRefusesPlainHTTP[C, M]},
		{"TextReply", textReply[C, M]},
		{"ErrorsClassified", errorsClassified[C, M]},
		{"RateLimitCarriesRetryAfter", rateLimit[C, M]},
		{"RedirectIsRefusedAndTheKeyStaysHome", redirect[C, M]},
		{"UnusableUsageIsChargedNothing", unusableUsage[C, M]},
		{"ConfigAndModelEncodeWithoutTheKey", encodeWithoutTheKey[C, M]},
		{"FromEnvReadsTheDocumentedVariables", fromEnv[C, M]},
		{"RequestsTheFormatCannotCarryAreRefusedUnsent", refusedUnsent[C, M]},
	}
}

// FakeAPI is a loopback provider that records what it receives and
// answers with a canned status, headers and body.
type FakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

// Serve starts a FakeAPI, closed when t ends.
func Serve(t *testing.T, status int, header http.Header, body string) *FakeAPI {
	t.Helper()
	f := &FakeAPI{}
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

// Requests is how many requests arrived.
func (f *FakeAPI) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// Header is request i's header.
func (f *FakeAPI) Header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

// Path is request i's method and path ("POST /v1/messages").
func (f *FakeAPI) Path(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paths[i]
}

// RawBody is request i's body as sent.
func (f *FakeAPI) RawBody(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.bodies[i])
}

// Body is request i's JSON body.
func (f *FakeAPI) Body(t *testing.T, i int) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(f.bodies[i], &m); err != nil {
		t.Fatalf("request body %d is not JSON: %v", i, err)
	}
	return m
}

// SimpleRequest is one user message, "hi".
func SimpleRequest() agentrt.ModelRequest {
	return agentrt.ModelRequest{Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
}

// open is New(Config(e)), with the Config.
func (a Adapter[C, M]) open(e providers.Endpoint) (C, M, error) {
	cfg := a.Config(e)
	m, err := a.New(cfg)
	return cfg, m, err
}

// Open is newModel(cfg), an adapter's New; a refusal fails t.
func Open[C any, M agentrt.Model](t *testing.T, newModel func(C) (M, error), cfg C) M {
	t.Helper()
	m, err := newModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// model is New(Config(e)) for an Endpoint at base with the key; a refusal
// fails t.
func (a Adapter[C, M]) model(t *testing.T, base string) M {
	t.Helper()
	return Open(t, a.New, a.Config(providers.Endpoint{BaseURL: base, APIKey: providers.NewSecret(a.Key), Model: "test-model"}))
}

func generate[C any, M agentrt.Model](t *testing.T, a Adapter[C, M], f *FakeAPI) (agentrt.ModelResponse, error) {
	return a.model(t, f.URL).Generate(context.Background(), SimpleRequest())
}

// New requires a model, refuses a negative cap and (where the provider
// needs one) no key for the default root, and names itself by Name, or by
// Model when Name is empty.
func newRequiresAModel[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	key := providers.NewSecret(a.Key)
	if _, _, err := a.open(providers.Endpoint{APIKey: key}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("no model: %v", err)
	}
	if _, _, err := a.open(providers.Endpoint{Model: "m", APIKey: key, MaxOutputTokens: -1}); !errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("negative cap: %v", err)
	}
	_, _, err := a.open(providers.Endpoint{Model: "m"})
	if a.KeyRequired != errors.Is(err, agentrt.ErrInvalidConfig) {
		t.Fatalf("no key for %s (required: %t): %v", a.DefaultBaseURL, a.KeyRequired, err)
	}
	_, m, err := a.open(providers.Endpoint{Model: "model-x", APIKey: key})
	if err != nil || m.Name() != "model-x" {
		t.Fatalf("model = %v, %v", m, err)
	}
	if p, ok := any(m).(agentrt.ModelProvider); !ok || p.Provider() != a.Provider {
		t.Fatalf("Provider() of %T is not %q", m, a.Provider)
	}
	if _, m, _ = a.open(providers.Endpoint{Model: "model-x", APIKey: key, Name: a.Provider + ":model-x"}); m.Name() != a.Provider+":model-x" {
		t.Fatalf("name override = %q", m.Name())
	}
}

// A key over plain http goes only to a loopback host.
func newRefusesPlainHTTP[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	key := providers.NewSecret(a.Key)
	for _, base := range []string{"http://api.example.com", "http://192.168.0.9:8080", "ftp://localhost"} {
		if _, _, err := a.open(providers.Endpoint{BaseURL: base, APIKey: key, Model: "m"}); !errors.Is(err, providers.ErrEndpoint) {
			t.Errorf("%s: %v, want ErrEndpoint", base, err)
		}
	}
	if _, _, err := a.open(providers.Endpoint{BaseURL: "http://[::1]:8080/", APIKey: key, Model: "m"}); err != nil {
		t.Errorf("loopback: %v", err)
	}
}

// A text reply maps to end_turn with its usage; the request went to the
// adapter's path with the key set as the provider reads it.
func textReply[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	f := Serve(t, 200, nil, a.Reply("Hello.", a.Usage))
	resp, err := generate(t, a, f)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello." || resp.StopReason != agentrt.StopEndTurn || resp.Usage != (agentrt.Usage{InputTokens: 20, OutputTokens: 7}) || len(resp.Raw) == 0 {
		t.Fatalf("resp = %+v", resp)
	}
	if p := f.Path(0); p != "POST "+a.Path {
		t.Fatalf("path = %q, want POST %s", p, a.Path)
	}
	if k := a.SentKey(f.Header(0)); k != a.Key {
		t.Fatalf("the request carried key %q", k)
	}
	if b := f.Body(t, 0); b["model"] != "test-model" {
		t.Fatalf("body = %v", b)
	}
}

// Statuses and unusable bodies are classified; the key is in no error.
func errorsClassified[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	f := Serve(t, 401, nil, a.ErrorBody("invalid key "+a.Key))
	_, err := generate(t, a, f)
	var se *providers.StatusError
	var te *agentrt.TransientError
	if !errors.As(err, &se) || se.Status != 401 || errors.As(err, &te) || strings.Contains(err.Error(), a.Key) {
		t.Fatalf("401: %v", err)
	}
	for _, status := range []int{500, 503} {
		f = Serve(t, status, nil, a.ErrorBody("overloaded"))
		if _, err = generate(t, a, f); !errors.As(err, &te) {
			t.Fatalf("%d: %v, want transient", status, err)
		}
	}
	f = Serve(t, 200, nil, `not json`)
	_, err = generate(t, a, f)
	var sv *agentrt.ServedError
	if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Fatalf("undecodable: %v", err)
	}
}

// A 429 is transient and carries Retry-After; nothing is retried.
func rateLimit[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	f := Serve(t, 429, http.Header{"Retry-After": {"30"}}, a.ErrorBody("rate limited"))
	_, err := generate(t, a, f)
	var te *agentrt.TransientError
	if !errors.As(err, &te) || te.RetryAfter != 30*time.Second || f.Requests() != 1 {
		t.Fatalf("err = %v (requests %d)", err, f.Requests())
	}
}

// A redirect is not followed: the target receives nothing and no error
// repeats the key or the target's path and query.
func redirect[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	target := Serve(t, 200, nil, a.Reply("stolen", a.Usage))
	for _, status := range []int{301, 302, 303, 307, 308} {
		loc := target.URL + "/collect?k=" + a.Key
		origin := Serve(t, status, http.Header{"Location": {loc}}, `<a href="`+loc+`">moved</a>`)
		_, err := generate(t, a, origin)
		var re *providers.RedirectError
		if !errors.As(err, &re) || re.Host != strings.TrimPrefix(target.URL, "http://") {
			t.Fatalf("%d: err = %v, want a RedirectError naming the target host", status, err)
		}
		for _, leak := range []string{a.Key, "collect", "k="} {
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("%d: error %q leaks %q", status, err, leak)
			}
		}
	}
	if n := target.Requests(); n != 0 {
		t.Fatalf("the redirect target received %d request(s)", n)
	}
}

// Usage that cannot be believed is a ServedError with zero usage wrapping
// ErrUnusableUsage.
func unusableUsage[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	if len(a.BadUsages) == 0 {
		t.Fatal("the adapter names no usage it refuses")
	}
	for _, usage := range a.BadUsages {
		f := Serve(t, 200, nil, a.Reply("hi", usage))
		resp, err := generate(t, a, f)
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("usage %s: resp=%+v err=%v", usage, resp, err)
		}
	}
}

// Neither Config, nor the Endpoint it embeds, nor Model shows the key in
// any encoding, nor does any encoding of a struct, slice or map holding
// one in an exported or unexported field, by value or by pointer; errors
// never repeat it.
func encodeWithoutTheKey[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	e := providers.Endpoint{APIKey: providers.NewSecret(a.Key), Model: "test-model", HTTPClient: &http.Client{}}
	cfg, m, err := a.open(e)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, v := range append(leaktest.Holders(cfg, m), leaktest.Holders(e, m)...) {
		outs = append(outs, leaktest.Encodings(t, v.V, v.Must...)...)
	}
	if _, _, err := a.open(providers.Endpoint{BaseURL: "http://api.example.com", APIKey: providers.NewSecret(a.Key), Model: "m"}); err == nil {
		t.Fatal("a key over plain http to a remote host must be refused")
	} else {
		outs = append(outs, err.Error())
	}
	f := Serve(t, 400, nil, a.ErrorBody("bad key "+a.Key))
	_, err = generate(t, a, f)
	outs = append(outs, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
	if o := leaktest.Leak(outs, a.Key); o != "" {
		t.Fatalf("an encoding shows the key: %s", o)
	}
	if o := leaktest.Leak(outs, "0123456789abcdef"); o != "" {
		t.Fatalf("an encoding shows part of the key: %s", o)
	}
	for _, s := range []any{cfg, e, m} {
		if out := leaktest.Encodings(t, s)[0]; !strings.Contains(out, `APIKey:"[redacted]"`) {
			t.Fatalf("the key's presence should show redacted: %s", out)
		}
	}
	// The Config prints under its own name and encodes every field of its
	// Endpoint, though the Endpoint's methods are promoted to it.
	if out := fmt.Sprint(cfg); !strings.HasPrefix(out, a.Provider+".Config{BaseURL:") {
		t.Errorf("Config prints as %s, want %s.Config{BaseURL:…", out, a.Provider)
	}
	j, err := json.Marshal(cfg)
	if err != nil || !strings.Contains(string(j), `"Model":"test-model"`) || !strings.Contains(string(j), `"HTTPClient":true`) {
		t.Errorf("Config encodes as %s, %v; want its Endpoint's fields", j, err)
	}
}

// The documented variables are read: the key, the root and the model.
func fromEnv[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	f := Serve(t, 200, nil, a.Reply("ok", a.Usage))
	t.Setenv(a.EnvKey, a.Key)
	t.Setenv(a.EnvBaseURL, f.URL+"/")
	t.Setenv(a.EnvModel, "env-model")
	m, err := a.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), SimpleRequest()); err != nil || m.Name() != "env-model" {
		t.Fatalf("model %v: %v", m, err)
	}
	if f.Path(0) != "POST "+a.Path || a.SentKey(f.Header(0)) != a.Key || f.Body(t, 0)["model"] != "env-model" {
		t.Fatalf("the environment's model sent %s with key %q", f.Path(0), a.SentKey(f.Header(0)))
	}
}

// A request no wire format can carry is refused as an ErrBadRequest, with
// nothing sent: a negative cap, a role other than user or assistant, a
// tool whose schema is not JSON, a tool use in a user turn, a tool result
// in an assistant turn, and a tool result without the id of the use it
// answers.
func refusedUnsent[C any, M agentrt.Model](t *testing.T, a Adapter[C, M]) {
	f := Serve(t, 200, nil, a.Reply("unused", a.Usage))
	m := a.model(t, f.URL)
	turn := func(role string, b agentrt.ContentBlock) []agentrt.Message {
		return []agentrt.Message{{Role: role, Content: []agentrt.ContentBlock{b}}}
	}
	hi := SimpleRequest().Messages
	for name, req := range map[string]agentrt.ModelRequest{
		"negative cap":               {Messages: hi, MaxOutputTokens: -1},
		"system role in the history": {Messages: turn("system", agentrt.ContentBlock{Type: agentrt.BlockText, Text: "x"})},
		"schema that is not JSON":    {Messages: hi, Tools: []agentrt.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`{"type":`)}}},
		"tool use in a user turn":    {Messages: turn(agentrt.RoleUser, agentrt.ContentBlock{Type: agentrt.BlockToolUse, ToolUseID: "u", Name: "t", Input: json.RawMessage(`{}`)})},
		"tool result from the model": {Messages: turn(agentrt.RoleAssistant, agentrt.ContentBlock{Type: agentrt.BlockToolResult, ToolUseID: "u", Content: "x"})},
		"tool result without its id": {Messages: turn(agentrt.RoleUser, agentrt.ContentBlock{Type: agentrt.BlockToolResult, Content: "x"})},
	} {
		_, err := m.Generate(context.Background(), req)
		var re *providers.RequestError
		if !errors.Is(err, providers.ErrBadRequest) || !errors.As(err, &re) || re.Provider != a.Provider {
			t.Errorf("%s: %v, want a %s RequestError", name, err, a.Provider)
		}
	}
	if n := f.Requests(); n != 0 {
		t.Fatalf("%d requests were sent for requests that cannot be", n)
	}
}
