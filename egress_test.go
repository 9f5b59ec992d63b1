package agentrt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/openai"
)

// egAPI is a loopback Chat Completions server that counts the connections
// it accepts and keeps the bytes of every request body it reads.
type egAPI struct {
	*httptest.Server
	mu     sync.Mutex
	conns  int
	bodies [][]byte
}

func newEgAPI(t *testing.T) *egAPI {
	a := &egAPI{}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.bodies = append(a.bodies, b)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1700000000,"model":"gpt-test",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	}))
	a.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			a.mu.Lock()
			a.conns++
			a.mu.Unlock()
		}
	}
	a.Start()
	t.Cleanup(a.Close)
	return a
}

func (a *egAPI) seen() (int, [][]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns, append([][]byte(nil), a.bodies...)
}

func (a *egAPI) host() string { return strings.TrimPrefix(a.URL, "http://") }

// egDriver runs one step that calls the real OpenAI adapter, pointed at
// api, once with req, under rules.
func egDriver(t *testing.T, e *bgEnv, api *egAPI, rules *agentrt.EgressRules, req agentrt.ModelRequest) (*agentrt.Driver, *mcOnce) {
	t.Helper()
	m, err := openai.New(openai.Config{Endpoint: providers.Endpoint{Model: "gpt-test", BaseURL: api.URL + "/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	agent := &mcOnce{req: req}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: e.store, Policy: agentrt.DefaultPolicy(),
		Model: &agentrt.ModelConfig{Model: m}, Egress: rules, Now: e.clock.Now}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return d, agent
}

// egManifest decodes the manifest of a model.dispatched or egress.denied
// event.
func egManifest(t *testing.T, ev agentrt.Event) (agentrt.EgressManifest, string) {
	t.Helper()
	if ev.Type == agentrt.EventModelDispatched {
		var p struct {
			Egress *agentrt.EgressManifest `json:"egress"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Egress == nil {
			t.Fatalf("model.dispatched has no manifest: %s (%v)", ev.Payload, err)
		}
		return *p.Egress, ""
	}
	var p struct {
		agentrt.EgressManifest
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.EgressManifest, p.Reason
}

// egDenied fails unless the agent's model call was refused with
// ErrEgressDenied and the run's chain holds exactly one egress.denied
// event; it returns that event's manifest and reason.
func egDenied(t *testing.T, e *bgEnv, agent *mcOnce, runID string) (agentrt.EgressManifest, string) {
	t.Helper()
	if _, err := agent.result(); !errors.Is(err, agentrt.ErrEgressDenied) {
		t.Fatalf("%s: Generate returned %v, want ErrEgressDenied", runID, err)
	}
	denied := kit.EventsOf(t, e.store, runID, agentrt.EventEgressDenied)
	if len(denied) != 1 {
		t.Fatalf("%s: %d egress.denied events, want 1", runID, len(denied))
	}
	return egManifest(t, denied[0])
}

// Egress rules that allow only api.openai.com deny a request to the
// loopback server, and one to a model they do not name: the server
// accepts no connection at all, no model call is dispatched, and the
// chain holds each denied manifest with its reason. Allowing the host lets
// the same request through, on one connection.
func TestEgress_DeniedRequestNeverLeaves(t *testing.T) {
	e := newBgEnv(t)
	api := newEgAPI(t)
	req := mcReq(16)
	for i, rules := range []*agentrt.EgressRules{
		{Hosts: []string{"api.openai.com"}},
		{Providers: []string{"openai"}, Models: []string{"gpt-other"}},
	} {
		d, agent := egDriver(t, e, api, rules, req)
		id := []string{"host", "model"}[i]
		run := e.start(d, id, "")
		m, why := egDenied(t, e, agent, id)
		if run.Status != agentrt.RunFailed {
			t.Fatalf("%s: run %s", id, run.Status)
		}
		if n := mcCount(t, e.store, id, agentrt.EventModelDispatched); n != 0 {
			t.Errorf("%s: %d model.dispatched events for a denied request", id, n)
		}
		if calls := mcCalls(t, e.store, id); len(calls) != 0 {
			t.Errorf("%s: model_calls %+v for a denied request", id, calls)
		}
		if m.Host != api.host() || m.Provider != "openai" || m.Model != "gpt-test" || m.Bytes == 0 || len(m.SHA256) != 64 || m.Messages != 1 || !m.Exact || why == "" {
			t.Errorf("%s: denied manifest %+v, reason %q", id, m, why)
		}
	}
	if conns, bodies := api.seen(); conns != 0 || len(bodies) != 0 {
		t.Fatalf("the server accepted %d connections and read %d requests, want none", conns, len(bodies))
	}
	d, _ := egDriver(t, e, api, &agentrt.EgressRules{Providers: []string{"openai"}, Hosts: []string{api.host()}}, req)
	kit.RequireEnded(t, e.start(d, "allowed", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if conns, bodies := api.seen(); conns != 1 || len(bodies) != 1 {
		t.Fatalf("allowed: the server accepted %d connections and read %d requests, want 1 and 1", conns, len(bodies))
	}
	rep, err := e.store.VerifyEvents(context.Background(), 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("chain: %+v %v", rep.Break, err)
	}
}

// A ceiling the prompt fits in by far, with a tool whose schema is large:
// the manifest counts the whole serialized request, tool definitions and
// schemas included, so the request is denied; the same prompt without the
// tool is sent.
func TestEgress_ByteCeilingCountsToolSchemas(t *testing.T) {
	e := newBgEnv(t)
	api := newEgAPI(t)
	small := mcReq(16)
	props := map[string]any{}
	for i := range 200 {
		props[strings.Repeat("field", 4)+string(rune('a'+i%26))+strings.Repeat("x", i%7)+string(rune('A'+i/26))] = map[string]any{
			"type": "string", "description": strings.Repeat("a long description of this field ", 3)}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	big := small
	big.Tools = []agentrt.ToolSpec{{Name: "wide", Description: "a tool with a wide schema", InputSchema: schema, SideEffect: agentrt.ReadOnly}}
	const ceiling = 4096
	if len(schema) < 4*ceiling {
		t.Fatalf("the schema is only %d bytes", len(schema))
	}
	rules := &agentrt.EgressRules{MaxRequestBytes: ceiling}
	d, agent := egDriver(t, e, api, rules, big)
	e.start(d, "wide", "")
	m, why := egDenied(t, e, agent, "wide")
	if m.Bytes <= int64(len(schema)) || m.MaxBytes != ceiling || m.Tools != 1 || !strings.Contains(why, "over the ceiling") {
		t.Errorf("manifest %+v (%q): want the bytes to include the %d-byte schema, the ceiling %d and one tool", m, why, len(schema), ceiling)
	}
	if conns, _ := api.seen(); conns != 0 {
		t.Fatalf("the wide request reached the server")
	}
	d, _ = egDriver(t, e, api, rules, small)
	kit.RequireEnded(t, e.start(d, "small", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	ev := kit.EventsOf(t, e.store, "small", agentrt.EventModelDispatched)
	if m, _ := egManifest(t, ev[0]); m.Bytes > ceiling || m.Tools != 0 {
		t.Errorf("small manifest %+v", m)
	}
}

// The server hashes each body it receives; the manifest recorded before
// transport names exactly those bytes (length and SHA-256), the host they
// went to, and the counts of messages and tools.
func TestEgress_ManifestMatchesTheBytesSent(t *testing.T) {
	e := newBgEnv(t)
	api := newEgAPI(t)
	req := mcReq(32)
	req.Messages = append(req.Messages, agentrt.Message{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Hello."}}},
		agentrt.Message{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Again, with é and \u2028."}}})
	req.Tools = mcToolSpecs()
	d, _ := egDriver(t, e, api, &agentrt.EgressRules{Hosts: []string{api.host()}, MaxRequestBytes: 1 << 20}, req)
	kit.RequireEnded(t, e.start(d, "m", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	_, bodies := api.seen()
	if len(bodies) != 1 {
		t.Fatalf("%d requests", len(bodies))
	}
	sum := sha256.Sum256(bodies[0])
	ev := kit.EventsOf(t, e.store, "m", agentrt.EventModelDispatched)
	m, _ := egManifest(t, ev[0])
	if m.SHA256 != hex.EncodeToString(sum[:]) || m.Bytes != int64(len(bodies[0])) {
		t.Fatalf("manifest says %d bytes %s; the server received %d bytes %x", m.Bytes, m.SHA256, len(bodies[0]), sum)
	}
	calls := mcCalls(t, e.store, "m")
	if m.Host != api.host() || m.Messages != 3 || m.Tools != len(req.Tools) || m.CallID != calls[0].ID || m.MaxBytes != 1<<20 || !m.Exact {
		t.Errorf("manifest %+v", m)
	}
}

func mcToolSpecs() []agentrt.ToolSpec {
	var out []agentrt.ToolSpec
	for _, tl := range mcTools() {
		out = append(out, tl.Spec())
	}
	return out
}

// EgressRules.Secrets takes "redact", "deny" or nothing, and needs the
// engine's Disclosure to find secrets; a Disclosure that fails on a
// request denies it, so nothing reaches the server, and egress.denied
// says why.
func TestEgress_SecretsRuleNeedsADisclosureAndFailsClosed(t *testing.T) {
	e := newBgEnv(t)
	api := newEgAPI(t)
	m, err := openai.New(openai.Config{Endpoint: providers.Endpoint{Model: "gpt-test", BaseURL: api.URL + "/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	failing := agentrt.DisclosureFunc(func(context.Context, agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
		return agentrt.DisclosureOutcome{}, errors.New("the rules are broken")
	})
	build := func(rules *agentrt.EgressRules, d agentrt.Disclosure) (*agentrt.Driver, *mcOnce, error) {
		agent := &mcOnce{req: mcReq(16)}
		drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: e.store, Policy: agentrt.DefaultPolicy(),
			Model: &agentrt.ModelConfig{Model: m}, Egress: rules, Disclosure: d, Now: e.clock.Now}, Agent: agent})
		return drv, agent, err
	}
	var ce *agentrt.ConfigError
	if _, _, err := build(&agentrt.EgressRules{Secrets: agentrt.EgressSecretsRedact}, nil); !errors.As(err, &ce) || ce.Field != "Config.Egress.Secrets" {
		t.Errorf("secrets without a disclosure: %v", err)
	}
	if _, _, err := build(&agentrt.EgressRules{Secrets: "mask"}, failing); !errors.As(err, &ce) || ce.Field != "Config.Egress.Secrets" {
		t.Errorf("an unknown secrets value: %v", err)
	}
	d, agent, err := build(&agentrt.EgressRules{Secrets: agentrt.EgressSecretsRedact}, failing)
	if err != nil {
		t.Fatal(err)
	}
	e.start(d, "broken", "")
	if _, why := egDenied(t, e, agent, "broken"); !strings.Contains(why, "could not judge") {
		t.Errorf("reason %q", why)
	}
	if conns, _ := api.seen(); conns != 0 {
		t.Fatalf("the request reached the server")
	}
}
