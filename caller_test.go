package agentrt_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/fakeprovider"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/render"
)

// mcOpenAI is the openai adapter pointed at a loopback fake provider that
// replays script, wrapped so the test sees each request the caller sends.
func mcOpenAI(t *testing.T, script []fakeprovider.Turn) (*fakeprovider.Server, *mcModel) {
	t.Helper()
	srv := fakeprovider.New(script)
	t.Cleanup(srv.Close)
	om, err := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: srv.URL(), Model: "gpt-fake"}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, &mcModel{name: om.Name(), GenerateFunc: func(ctx context.Context, _ int, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return om.Generate(ctx, req)
	}}
}

// The render agent drives the openai adapter over the wire against the fake
// provider: each reply's usage, as the server reported it, is recorded and
// priced, and the run completes through the terminal tool under projected
// token and cost limits.
func TestCaller_EndToEndThroughTheOpenAIAdapter(t *testing.T) {
	price := agentrt.Price{InputPerMTok: 2_000_000, CachedInputPerMTok: 500_000, OutputPerMTok: 8_000_000}
	prices := agentrt.PriceTable{"gpt-fake": price}
	agent := render.Agent{Options: render.Options{Opening: "Echo hi, then finish."}, MaxOutputTokens: 256}
	limits := mcLimits(func(l *agentrt.Limits) {
		l.MaxTotalTokens = 100_000
		l.MaxEstimatedCost = 1_000_000
	})

	t.Run("completes", func(t *testing.T) {
		u1 := agentrt.Usage{InputTokens: 120, OutputTokens: 15, CachedInputTokens: 20}
		u2 := agentrt.Usage{InputTokens: 200, OutputTokens: 10, CachedInputTokens: 100}
		srv, m := mcOpenAI(t, []fakeprovider.Turn{
			{ToolCalls: []fakeprovider.ToolCall{{Name: "echo", Arguments: `{"text":"hi"}`}}, Usage: u1},
			{ToolCalls: []fakeprovider.ToolCall{{Name: "done", Arguments: `{"answer":"hi"}`}}, Usage: u2},
		})
		env := mcSetup(t, m, agentrt.ModelConfig{Prices: prices}, agent)
		run := env.start(t, "echo hi", limits)
		mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		// 100 uncached at 2, 20 cached at 0.5, 15 out at 8; then 100, 100, 10.
		c1, c2 := agentrt.CostOf(price, u1), agentrt.CostOf(price, u2)
		if c1 != 330 || c2 != 330 {
			t.Fatalf("costs %d, %d, want 330 each", c1, c2)
		}
		mcRequireCalls(t, env.store, "r",
			mcWant{status: agentrt.ModelOK, usage: u1, cost: c1},
			mcWant{status: agentrt.ModelOK, usage: u2, cost: c2})
		mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 2, mcAdd(u1, u2), c1+c2)
		calls := mcCalls(t, env.store, "r")
		steps, err := env.store.ListSteps(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 2 || calls[0].StepID != steps[0].ID || calls[1].StepID != steps[1].ID {
			t.Fatalf("calls belong to steps %q, %q; steps %+v", calls[0].StepID, calls[1].StepID, steps)
		}
		bodies := srv.Requests()
		if len(bodies) != 2 {
			t.Fatalf("the server got %d requests, want 2", len(bodies))
		}
		for i, b := range bodies {
			if !bytes.Contains(b, []byte(`"max_tokens":256`)) {
				t.Errorf("request %d does not carry the output cap: %s", i, b)
			}
		}
		if !bytes.Contains(bodies[1], []byte(`"tool_call_id"`)) {
			t.Errorf("the second request does not carry the first step's result: %s", bodies[1])
		}
		if got := [2]int{mcCount(t, env.store, "r", agentrt.EventModelDispatched), mcCount(t, env.store, "r", agentrt.EventModelCompleted)}; got != [2]int{2, 2} {
			t.Fatalf("model.dispatched, model.completed events: %v, want [2 2]", got)
		}
	})

	t.Run("usage the adapter cannot read is charged the estimate", func(t *testing.T) {
		srv, m := mcOpenAI(t, []fakeprovider.Turn{
			{ToolCalls: []fakeprovider.ToolCall{{Name: "echo", Arguments: `{}`}}, UsageJSON: `{"prompt_tokens":-5,"completion_tokens":3}`},
		})
		env := mcSetup(t, m, agentrt.ModelConfig{Prices: prices, MaxRetries: 3}, agent)
		run := env.start(t, "echo hi", limits)
		mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonModelUnavailable)
		reqs := m.requests()
		if len(reqs) != 1 || len(srv.Requests()) != 1 {
			t.Fatalf("%d requests sent, %d received, want 1", len(reqs), len(srv.Requests()))
		}
		est := mcEstimate(reqs[0])
		if est.OutputTokens != 256 {
			t.Fatalf("estimate %+v, want the 256-token cap as its output", est)
		}
		mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelError, usage: est, cost: agentrt.CostOf(price, est), errPart: "unusable usage"})
		mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 1, est, agentrt.CostOf(price, est))
		if steps, _ := env.store.ListSteps(context.Background(), "r"); len(steps) != 1 || steps[0].Decision != nil && steps[0].Decision.Kind == agentrt.KindToolCall {
			t.Fatalf("steps %+v: the discarded reply's tool call must not be decided", steps)
		}
	})

	t.Run("server errors are retried, then the model is unavailable", func(t *testing.T) {
		srv, m := mcOpenAI(t, nil) // every request gets HTTP 500
		env := mcSetup(t, m, agentrt.ModelConfig{Prices: prices, MaxRetries: 2}, agent)
		run := env.start(t, "echo hi", limits)
		mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonModelUnavailable)
		if n := len(srv.Requests()); n != 3 {
			t.Fatalf("the server got %d requests, want 3", n)
		}
		failed := mcWant{status: agentrt.ModelError, errPart: "HTTP 500"}
		mcRequireCalls(t, env.store, "r", failed, failed, failed)
		mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 3, agentrt.Usage{}, 0)
		if w := env.sleep.Waits(); len(w) != 2 || w[0] != time.Second || w[1] != 2*time.Second {
			t.Fatalf("waits %v, want [1s 2s]", w)
		}
	})
}
