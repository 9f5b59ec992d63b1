package disclosure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/internal/fakeprovider"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/render"
)

// egressRun drives the render agent over the real OpenAI adapter against
// the loopback fake provider, whose script calls echo with a GitHub token
// and then done; the opening message holds an AWS key. It returns the
// run, the bodies the provider received and the run's egress manifests.
func egressRun(t *testing.T, egress *agentrt.EgressRules) (agentrt.Run, [][]byte, []agentrt.EgressManifest, []string) {
	t.Helper()
	srv := fakeprovider.New([]fakeprovider.Turn{
		{ToolCalls: []fakeprovider.ToolCall{{Name: "echo", Arguments: `{"token":"` + corpus()[2].Value + `"}`}}},
		{ToolCalls: []fakeprovider.ToolCall{{Name: "done", Arguments: `{"answer":"ok"}`}}},
	})
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: srv.URL(), Model: "gpt-fake"}})
	if err != nil {
		t.Fatal(err)
	}
	echo := func(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: call.Args, Summary: "echoed"}, nil
	}
	spec := func(name string, terminal bool) agentrt.ToolSpec {
		return agentrt.ToolSpec{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			SideEffect: agentrt.ReadOnly, Timeout: 5 * time.Second, Terminal: terminal}
	}
	st := openDB(t)
	agent := render.Agent{Options: render.Options{Opening: "Deploy with the key " + corpus()[0].Value + ", then finish."}, MaxOutputTokens: 256}
	drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools:      []agentrt.Tool{agentrt.ToolFunc{ToolSpec: spec("echo", false), Fn: echo}, agentrt.ToolFunc{ToolSpec: spec("done", true), Fn: echo}},
		Model:      &agentrt.ModelConfig{Model: m},
		Disclosure: rules(t, disclosure.Default()), Egress: egress}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	run, err := drv.StartWithID(context.Background(), "r", "deploy", agentrt.DefaultLimits())
	if err != nil && !errors.Is(err, agentrt.ErrEgressDenied) {
		t.Fatal(err)
	}
	evs, err := st.ListEvents(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	var ms []agentrt.EgressManifest
	var reasons []string
	for _, ev := range evs {
		switch ev.Type {
		case agentrt.EventModelDispatched:
			p, err := agentrt.PayloadAs[agentrt.ModelDispatchedPayload](ev)
			if err != nil || p.Egress == nil {
				t.Fatalf("model.dispatched %s: %v", ev.Payload, err)
			}
			ms = append(ms, *p.Egress)
		case agentrt.EventEgressDenied:
			p, err := agentrt.PayloadAs[agentrt.EgressDeniedPayload](ev)
			if err != nil {
				t.Fatal(err)
			}
			ms, reasons = append(ms, p.EgressManifest), append(reasons, p.Reason)
		}
	}
	return run, srv.Requests(), ms, reasons
}

// A provider request whose opening message carries an AWS key, and later
// the model's own earlier arguments a GitHub token, is judged before it
// leaves: under "redact" the fake provider receives every request with
// both redacted in place and the run completes, each manifest listing
// pointer and kind; under "deny" the first request never leaves and
// egress.denied records its manifest with the findings and why; with no
// secrets rule the provider receives the key, so the checks can fail.
func TestEgress_ProviderRequestCarryingASecretIsRedactedOrDenied(t *testing.T) {
	key, token := corpus()[0].Value, corpus()[2].Value
	run, bodies, ms, _ := egressRun(t, &agentrt.EgressRules{Secrets: agentrt.EgressSecretsRedact})
	if run.Status != agentrt.RunCompleted || len(bodies) != 2 || len(ms) != 2 {
		t.Fatalf("redact: run %s, %d requests, %d manifests", run.Status, len(bodies), len(ms))
	}
	for i, b := range bodies {
		if got := leaks(b); len(got) != 0 {
			t.Errorf("request %d reached the provider holding %v", i, got)
		}
		if !bytes.Contains(b, []byte(agentrt.DisclosureMarker(disclosure.RuleAWSAccessKeyID))) {
			t.Errorf("request %d does not say what was redacted: %s", i, b)
		}
		if !ms[i].Redacted || !hasSecret(ms[i].Secrets, "/messages/0/content/0/text", disclosure.RuleAWSAccessKeyID) {
			t.Errorf("manifest %d: %+v", i, ms[i])
		}
	}
	if !hasSecret(ms[1].Secrets, "/messages/1/content/0/input/token", disclosure.RuleGitHubToken) {
		t.Errorf("the second manifest does not name the model's own argument: %+v", ms[1].Secrets)
	}

	run, bodies, ms, reasons := egressRun(t, &agentrt.EgressRules{Secrets: agentrt.EgressSecretsDeny})
	if run.Status != agentrt.RunFailed || len(bodies) != 0 || len(ms) != 1 || len(reasons) != 1 {
		t.Fatalf("deny: run %s, %d requests, %d manifests", run.Status, len(bodies), len(ms))
	}
	if ms[0].Redacted || !hasSecret(ms[0].Secrets, "/messages/0/content/0/text", disclosure.RuleAWSAccessKeyID) || reasons[0] == "" {
		t.Errorf("denied manifest %+v, reason %q", ms[0], reasons[0])
	}

	_, bodies, ms, _ = egressRun(t, nil)
	if len(bodies) == 0 || !bytes.Contains(bodies[0], []byte(key)) || !bytes.Contains(bodies[1], []byte(token)) || len(ms[0].Secrets) != 0 {
		t.Fatalf("with no secrets rule the provider did not receive the key and token as sent (%d requests)", len(bodies))
	}
}

func hasSecret(ss []agentrt.ArgumentSecret, ptr, kind string) bool {
	for _, s := range ss {
		if s.Pointer == ptr && s.Kind == kind {
			return true
		}
	}
	return false
}
