package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/fakeprovider"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/render"
)

// hostileText is n bytes of emoji and rare CJK ideographs in no pattern a
// tokenizer learned: text a byte-level BPE tokenizer spends about one token
// per byte on.
func hostileText(n int) string {
	r := rand.New(rand.NewPCG(9, 10))
	var b strings.Builder
	for b.Len()+4 <= n {
		if r.IntN(2) == 0 {
			b.WriteRune(rune(0x1F300 + r.IntN(0x1FAFF-0x1F300))) // emoji, four bytes
		} else {
			b.WriteRune(rune(0x20000 + r.IntN(0xA6DF))) // CJK extension B, four bytes
		}
	}
	for b.Len() < n {
		b.WriteByte('x')
	}
	return b.String()
}

// A tool returns 30,000 bytes that tokenize at about one token per byte.
// The next request would then carry some 30,000 input tokens, under a
// token limit of 20,000 that the old projection (the request's JSON length
// over three, about 10,000) let through. The projection is an upper bound,
// so the call is refused before it is sent: the scripted model server sees
// only the first request, and the run ends as limit_tokens.
func TestModel_HostileToolOutputCannotCrossTheTokenLimit(t *testing.T) {
	const hostileBytes = 30_000
	const limit = 20_000
	hostile := hostileText(hostileBytes)
	if len(hostile) != hostileBytes {
		t.Fatalf("hostile text is %d bytes, want %d", len(hostile), hostileBytes)
	}
	// The limit lies between what a third of the bytes projects and what
	// the bytes can cost: the old rule lets the call through, the truth
	// crosses.
	if hostileBytes/3+5_000 >= limit || hostileBytes <= limit {
		t.Fatalf("limit %d does not separate %d bytes from a third of them", limit, hostileBytes)
	}
	content, err := json.Marshal(hostile)
	if err != nil {
		t.Fatal(err)
	}
	fetch := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "fetch", Description: "Fetch the page.",
		InputSchema: json.RawMessage(`{"type":"object"}`), SideEffect: agentrt.ReadOnly, Timeout: 5 * time.Second},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: content, Summary: "the page"}, nil
		}}
	done := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "done", Description: "Finish.",
		InputSchema: json.RawMessage(`{"type":"object"}`), SideEffect: agentrt.ReadOnly, Timeout: 5 * time.Second, Terminal: true},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{}`), Summary: "done"}, nil
		}}

	// The second turn is there so that a call let through completes the
	// run rather than failing it some other way.
	srv := fakeprovider.New([]fakeprovider.Turn{
		{ToolCalls: []fakeprovider.ToolCall{{Name: "fetch", Arguments: `{}`}}, Usage: agentrt.Usage{InputTokens: 200, OutputTokens: 20}},
		{ToolCalls: []fakeprovider.ToolCall{{Name: "done", Arguments: `{}`}}, Usage: agentrt.Usage{InputTokens: 200, OutputTokens: 20}},
	})
	defer srv.Close()
	m, err := openai.New(openai.Config{Endpoint: providers.Endpoint{BaseURL: srv.URL(), Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	agent := render.Agent{Options: render.Options{Opening: "Read the page.", MaxContentBytes: 1 << 20}, MaxOutputTokens: 64}
	env := mcSetup(t, m, agentrt.ModelConfig{}, agent)
	env.drv, err = agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  env.store,
			Policy: agentrt.DefaultPolicy(),
			Tools:  []agentrt.Tool{fetch, done},
			Model:  env.mcfg,
			Now:    env.clock.Now,
		},
		Agent: agent,
	})
	if err != nil {
		t.Fatal(err)
	}

	run := env.start(t, "read", mcLimits(func(l *agentrt.Limits) { l.MaxTotalTokens = limit }))
	mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitTokens)
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model server received %d requests, want 1: the request carrying the tool output must not be sent", n)
	}
	mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelOK, usage: agentrt.Usage{InputTokens: 200, OutputTokens: 20}})
	if n := mcCount(t, env.store, "r", agentrt.EventModelDispatched); n != 1 {
		t.Fatalf("%d model.dispatched events, want 1", n)
	}
	if n := mcCount(t, env.store, "r", agentrt.EventLimitExceeded); n != 1 {
		t.Fatalf("%d limit.exceeded events, want 1", n)
	}
}

// mcCounter is a model that counts its requests' input tokens with
// CountFunc, counting how often it is asked.
type mcCounter struct {
	*mcModel
	CountFunc func(ctx context.Context, req agentrt.ModelRequest) (int64, error)
	asked     atomic.Int32
}

func (m *mcCounter) CountInputTokens(ctx context.Context, req agentrt.ModelRequest) (int64, error) {
	m.asked.Add(1)
	return m.CountFunc(ctx, req)
}

// mcHostileReq is a request carrying 30,000 bytes that tokenize at about
// one token per byte, capped at 64 output tokens.
func mcHostileReq() agentrt.ModelRequest {
	req := mcReq(64)
	req.Messages[0].Content[0].Text = hostileText(30_000)
	return req
}

// mcDispatchedEstimates are the input estimates the run's model.dispatched
// events recorded.
func mcDispatchedEstimates(t *testing.T, st agentrt.StoreReader, runID string) []int64 {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range evs {
		if e.Type != agentrt.EventModelDispatched {
			continue
		}
		var p struct {
			Estimate agentrt.Usage `json:"estimate"`
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Estimate.InputTokens)
	}
	return out
}

// A model that counts tokens exactly is projected by its count: a request
// the upper bound would refuse is sent when the count fits, and the count
// is the estimate recorded. Without a token or cost limit the counter is
// not asked, since nothing needs a projection before the call.
func TestModel_TokenCounterReplacesTheBound(t *testing.T) {
	req := mcHostileReq()
	if agentrt.EstimateInputTokens(req) < 30_000 {
		t.Fatal("the bound does not cover the hostile request")
	}
	for _, tc := range []struct {
		name   string
		limits func(*agentrt.Limits)
		asked  int32
		est    int64
	}{
		{"under a token limit", func(l *agentrt.Limits) { l.MaxTotalTokens = 7_000 + 64 }, 1, 7_000},
		{"under a cost limit", func(l *agentrt.Limits) { l.MaxEstimatedCost = 7_000 + 3*64 }, 1, 7_000},
		{"with no limit", nil, 0, agentrt.EstimateInputTokens(req)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mcCounter{mcModel: &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 7_000, OutputTokens: 5})},
				CountFunc: func(context.Context, agentrt.ModelRequest) (int64, error) { return 7_000, nil }}
			agent := &mcOnce{req: req}
			env := mcSetup(t, m, agentrt.ModelConfig{Prices: agentrt.PriceTable{"m": mcPrice}}, agent)
			run := env.start(t, "read", mcLimits(tc.limits))
			if _, gerr := agent.result(); gerr != nil {
				t.Fatalf("Generate: %v", gerr)
			}
			mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
			if n := len(m.requests()); n != 1 {
				t.Fatalf("model called %d times, want 1", n)
			}
			if n := m.asked.Load(); n != tc.asked {
				t.Fatalf("counter asked %d times, want %d", n, tc.asked)
			}
			if got := mcDispatchedEstimates(t, env.store, "r"); len(got) != 1 || got[0] != tc.est {
				t.Fatalf("recorded input estimates %v, want [%d]", got, tc.est)
			}
		})
	}
}

// A counter that fails, panics, or answers with a count no request has is
// not believed: the projection falls back to the upper bound, never to
// less, so a request the bound crosses is refused before it is sent.
func TestModel_FailingTokenCounterFallsBackToTheBound(t *testing.T) {
	req := mcHostileReq()
	for _, tc := range []struct {
		name  string
		count func(context.Context, agentrt.ModelRequest) (int64, error)
	}{
		{"error", func(context.Context, agentrt.ModelRequest) (int64, error) { return 1, errors.New("count_tokens: 500") }},
		{"panic", func(context.Context, agentrt.ModelRequest) (int64, error) { panic("counter bug") }},
		{"negative", func(context.Context, agentrt.ModelRequest) (int64, error) { return -1, nil }},
		{"implausible", func(context.Context, agentrt.ModelRequest) (int64, error) { return 1 << 50, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mcCounter{mcModel: &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 1, OutputTokens: 1})},
				CountFunc: tc.count}
			agent := &mcOnce{req: req}
			env := mcSetup(t, m, agentrt.ModelConfig{}, agent)
			// A third of the request's bytes fits; the bytes do not.
			run := env.start(t, "read", mcLimits(func(l *agentrt.Limits) { l.MaxTotalTokens = 20_000 }))
			_, gerr := agent.result()
			var le *agentrt.LimitError
			if !errors.As(gerr, &le) || le.Reason != agentrt.ReasonLimitTokens {
				t.Fatalf("Generate: %v, want a LimitError %s", gerr, agentrt.ReasonLimitTokens)
			}
			mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitTokens)
			if n := m.asked.Load(); n != 1 {
				t.Fatalf("counter asked %d times, want 1", n)
			}
			if n := len(m.requests()); n != 0 {
				t.Fatalf("model called %d times, want 0", n)
			}
			mcRequireCalls(t, env.store, "r")
			mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 0, agentrt.Usage{}, 0)
		})
	}
}
