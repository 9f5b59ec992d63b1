package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/providers"
	"github.com/agentrt/agentrt/sqlite"
)

// The helpers here are prefixed mc (model caller) so they stay apart from
// the helpers of the package's other tests.

// mcModel is a hand-written fake model: GenerateFunc answers each attempt,
// numbered from 1.
type mcModel struct {
	name         string
	GenerateFunc func(ctx context.Context, n int, req agentrt.ModelRequest) (agentrt.ModelResponse, error)

	mu   sync.Mutex
	reqs []agentrt.ModelRequest
}

func (m *mcModel) Name() string { return m.name }

func (m *mcModel) Generate(ctx context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	n := len(m.reqs)
	m.mu.Unlock()
	return m.GenerateFunc(ctx, n, req)
}

func (m *mcModel) requests() []agentrt.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]agentrt.ModelRequest(nil), m.reqs...)
}

// mcReply answers every attempt with a reply using u.
func mcReply(u agentrt.Usage) func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn, Usage: u}, nil
	}
}

// mcRequireLimitRefused requires err, what the model call named what
// returned, to be a LimitError for reason, the run to have failed for it,
// and m to have been sent sent requests in all: the refused call never.
func mcRequireLimitRefused(t *testing.T, run agentrt.Run, what string, err error, reason agentrt.TerminalReason, m *mcModel, sent int) {
	t.Helper()
	var le *agentrt.LimitError
	if !errors.As(err, &le) || le.Reason != reason {
		t.Fatalf("%s: %v, want a LimitError %s", what, err, reason)
	}
	mcRequireEnded(t, run, agentrt.RunFailed, reason)
	if n := len(m.requests()); n != sent {
		t.Fatalf("model called %d times, want %d: the refused call must not be sent", n, sent)
	}
}

// mcSleeper records the waits the caller asks for and returns at once.
type mcSleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *mcSleeper) Sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return nil
}

func (s *mcSleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// mcEnv is a driver over a file-backed store with a fake model, clock and
// sleep.
type mcEnv struct {
	store *sqlite.Store
	clock *kit.FakeClock
	sleep *mcSleeper
	model *mcModel
	mcfg  *agentrt.ModelConfig
	drv   *agentrt.Driver
}

// mcSetup builds the environment; mcfg.Model is set to model when nil.
func mcSetup(t *testing.T, model agentrt.Model, mcfg agentrt.ModelConfig, agent agentrt.Agent) *mcEnv {
	t.Helper()
	st := openAt(t, filepath.Join(t.TempDir(), "agentrt.db"))
	t.Cleanup(func() { _ = st.Close() })
	env := &mcEnv{store: st, clock: kit.ClockAt(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), sleep: &mcSleeper{}}
	env.model, _ = model.(*mcModel)
	if mcfg.Model == nil {
		mcfg.Model = model
	}
	env.mcfg = &mcfg
	agentrt.SetModelSleep(env.mcfg, env.sleep.Sleep)
	allow := agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
		return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
	})
	drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: allow, Tools: mcTools(), Model: env.mcfg, Now: env.clock.Now}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	env.drv = drv
	return env
}

// mcTools are echo (read-only) and done (terminal).
func mcTools() []agentrt.Tool {
	echo := func(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: call.Args, Summary: "echoed"}, nil
	}
	return []agentrt.Tool{
		agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "echo", Description: "Echo the arguments.",
			InputSchema: json.RawMessage(`{"type":"object"}`), SideEffect: agentrt.ReadOnly, Timeout: 5 * time.Second}, Fn: echo},
		agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "done", Description: "Finish with an answer.",
			InputSchema: json.RawMessage(`{"type":"object"}`), SideEffect: agentrt.ReadOnly, Timeout: 5 * time.Second, Terminal: true}, Fn: echo},
	}
}

// mcLimits are the default limits changed by fn.
func mcLimits(fn func(*agentrt.Limits)) agentrt.Limits {
	l := agentrt.DefaultLimits()
	if fn != nil {
		fn(&l)
	}
	return l
}

// mcReq is a small request with output cap max.
func mcReq(max int64) agentrt.ModelRequest {
	return agentrt.ModelRequest{System: "Be brief.", MaxOutputTokens: max,
		Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Say hello."}}}}}
}

// mcOnce is an agent whose first step calls Generate once with req and
// returns its error, or completes; it records what Generate returned.
type mcOnce struct {
	req  agentrt.ModelRequest
	mu   sync.Mutex
	resp agentrt.ModelResponse
	err  error
}

func (a *mcOnce) Decide(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	resp, err := in.Model.Generate(ctx, a.req)
	a.mu.Lock()
	a.resp, a.err = resp, err
	a.mu.Unlock()
	if err != nil {
		return agentrt.Decision{}, err
	}
	return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{"said":"hello"}`)}, nil
}

func (a *mcOnce) result() (agentrt.ModelResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resp, a.err
}

func mcCalls(t *testing.T, st agentrt.StoreReader, runID string) []agentrt.ModelCall {
	t.Helper()
	calls, err := st.ListModelCalls(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

func mcCount(t *testing.T, st agentrt.StoreReader, runID string, typ agentrt.EventType) int {
	t.Helper()
	return len(kit.EventsOf(t, st, runID, typ))
}

// mcWant is what one model_calls row must hold; errPart is part of its
// error text (an ok row must have none).
type mcWant struct {
	status  agentrt.ModelCallStatus
	usage   agentrt.Usage
	cost    agentrt.Micros
	errPart string
}

// mcRequireCalls checks every row of the run against want, in order, and
// that each attempt is numbered and completed.
func mcRequireCalls(t *testing.T, st agentrt.StoreReader, runID string, want ...mcWant) {
	t.Helper()
	calls := mcCalls(t, st, runID)
	if len(calls) != len(want) {
		t.Fatalf("model_calls: got %d rows %+v, want %d", len(calls), calls, len(want))
	}
	for i, c := range calls {
		w := want[i]
		if c.Status != w.status || c.Usage != w.usage || c.Cost != w.cost {
			t.Errorf("model_calls[%d]: got status %s usage %+v cost %d, want status %s usage %+v cost %d",
				i, c.Status, c.Usage, c.Cost, w.status, w.usage, w.cost)
		}
		if (w.status == agentrt.ModelOK && c.Error != "") || !strings.Contains(c.Error, w.errPart) {
			t.Errorf("model_calls[%d]: error %q, want it to contain %q", i, c.Error, w.errPart)
		}
		if c.CompletedAt.IsZero() || c.DispatchedAt.IsZero() {
			t.Errorf("model_calls[%d]: dispatched %s completed %s, want both set", i, c.DispatchedAt, c.CompletedAt)
		}
		if c.Model == "" || c.StepID == "" || c.RunID != runID {
			t.Errorf("model_calls[%d]: model %q step %q run %q", i, c.Model, c.StepID, c.RunID)
		}
	}
}

// mcRequireTotals checks the run's accounting columns.
func mcRequireTotals(t *testing.T, run agentrt.Run, calls int, usage agentrt.Usage, cost agentrt.Micros) {
	t.Helper()
	if run.ModelCalls != calls || run.Usage != usage || run.EstimatedCost != cost {
		t.Fatalf("run totals: calls %d usage %+v cost %d, want calls %d usage %+v cost %d",
			run.ModelCalls, run.Usage, run.EstimatedCost, calls, usage, cost)
	}
}

// start starts run "r" towards goal on the environment's driver, and fails
// the test if Start returns an error.
func (e *mcEnv) start(t *testing.T, goal string, limits agentrt.Limits) agentrt.Run {
	t.Helper()
	run, err := e.drv.StartWithID(context.Background(), "r", goal, limits)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func mcRequireEnded(t *testing.T, run agentrt.Run, status agentrt.RunStatus, reason agentrt.TerminalReason) {
	t.Helper()
	if run.Status != status || run.Reason != reason {
		t.Fatalf("run: status %s reason %s (%s), want %s %s", run.Status, run.Reason, run.ReasonDetail, status, reason)
	}
}

// mcEstimate is what the caller charges for req when real usage is unknown.
func mcEstimate(req agentrt.ModelRequest) agentrt.Usage {
	return agentrt.Usage{InputTokens: agentrt.EstimateInputTokens(req), OutputTokens: req.MaxOutputTokens}
}

func mcAdd(a, b agentrt.Usage) agentrt.Usage {
	return agentrt.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		CachedInputTokens: a.CachedInputTokens + b.CachedInputTokens}
}

// mcPrice is one micro per input token, half a micro per cached input token
// and three micros per output token.
var mcPrice = agentrt.Price{InputPerMTok: 1_000_000, CachedInputPerMTok: 500_000, OutputPerMTok: 3_000_000}

// Two steps each ask for a reply of 20 tokens at most; the first uses 150
// tokens (and 250 micros). Under a limit one short of the first's usage
// plus the second's projection, the second is refused before it is sent;
// at exactly that limit it is sent.
func TestModel_TokenAndCostLimitsProjected(t *testing.T) {
	req := mcReq(20)
	est := mcEstimate(req)
	used := agentrt.Usage{InputTokens: 100, OutputTokens: 50}
	usedCost := agentrt.CostOf(mcPrice, used) // 100 + 150
	if usedCost != 250 {
		t.Fatalf("cost of %+v = %d, want 250", used, usedCost)
	}
	estCost := agentrt.CostOf(mcPrice, est)
	projTokens := used.InputTokens + used.OutputTokens + est.InputTokens + est.OutputTokens
	for _, tc := range []struct {
		name   string
		limits func(*agentrt.Limits)
		refuse agentrt.TerminalReason // "" when the second call fits
	}{
		{"tokens one over", func(l *agentrt.Limits) { l.MaxTotalTokens = projTokens - 1 }, agentrt.ReasonLimitTokens},
		{"tokens exactly", func(l *agentrt.Limits) { l.MaxTotalTokens = projTokens }, ""},
		{"cost one over", func(l *agentrt.Limits) { l.MaxEstimatedCost = usedCost + estCost - 1 }, agentrt.ReasonLimitCost},
		{"cost exactly", func(l *agentrt.Limits) { l.MaxEstimatedCost = usedCost + estCost }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var secondErr error
			agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
				_, err := in.Model.Generate(ctx, req)
				if in.Steps.Len() == 0 {
					if err != nil {
						t.Errorf("first call: %v", err)
					}
					return agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "echo", Args: json.RawMessage(`{}`)}, err
				}
				secondErr = err
				if err != nil {
					return agentrt.Decision{}, err
				}
				return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
			})
			m := &mcModel{name: "m", GenerateFunc: mcReply(used)}
			env := mcSetup(t, m, agentrt.ModelConfig{Prices: agentrt.PriceTable{"m": mcPrice}}, agent)
			run := env.start(t, "greet", mcLimits(tc.limits))
			ok := mcWant{status: agentrt.ModelOK, usage: used, cost: usedCost}
			if tc.refuse == "" {
				if secondErr != nil {
					t.Fatalf("second call at the limit: %v", secondErr)
				}
				mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
				mcRequireCalls(t, env.store, "r", ok, ok)
				mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 2, mcAdd(used, used), 2*usedCost)
				return
			}
			mcRequireLimitRefused(t, run, "second call", secondErr, tc.refuse, m, 1)
			// Only the first call is recorded or counted.
			mcRequireCalls(t, env.store, "r", ok)
			mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 1, used, usedCost)
			if n := mcCount(t, env.store, "r", agentrt.EventModelDispatched); n != 1 {
				t.Fatalf("%d model.dispatched events, want 1", n)
			}
			if n := mcCount(t, env.store, "r", agentrt.EventLimitExceeded); n != 1 {
				t.Fatalf("%d limit.exceeded events, want 1", n)
			}
		})
	}
}

// A request with no output cap cannot be projected: under a token limit, or
// a cost limit on a model whose output is priced, it is refused before
// anything is written. A paid model missing from the price table is refused
// under a cost limit; a model declared free is not.
func TestModel_UncappedRequestRefusedUnderAProjectedLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prices agentrt.PriceTable
		cap    int64
		limits func(*agentrt.Limits)
		refuse agentrt.TerminalReason
	}{
		{"token limit", nil, 0, func(l *agentrt.Limits) { l.MaxTotalTokens = 1 << 30 }, agentrt.ReasonLimitTokens},
		{"cost limit on a priced model", agentrt.PriceTable{"m": mcPrice}, 0, func(l *agentrt.Limits) { l.MaxEstimatedCost = 1 << 40 }, agentrt.ReasonLimitCost},
		{"cost limit on an unpriced model", agentrt.PriceTable{"other": mcPrice}, 100, func(l *agentrt.Limits) { l.MaxEstimatedCost = 1 << 40 }, agentrt.ReasonLimitCost},
		{"cost limit on a free model", agentrt.PriceTable{"m": {}}, 0, func(l *agentrt.Limits) { l.MaxEstimatedCost = 1 << 40 }, ""},
		{"no limit", nil, 0, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 10, OutputTokens: 5})}
			agent := &mcOnce{req: mcReq(tc.cap)}
			env := mcSetup(t, m, agentrt.ModelConfig{Prices: tc.prices}, agent)
			run := env.start(t, "greet", mcLimits(tc.limits))
			_, gerr := agent.result()
			if tc.refuse == "" {
				if gerr != nil {
					t.Fatal(gerr)
				}
				mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
				mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelOK, usage: agentrt.Usage{InputTokens: 10, OutputTokens: 5}})
				return
			}
			mcRequireLimitRefused(t, run, "Generate", gerr, tc.refuse, m, 0)
			mcRequireCalls(t, env.store, "r")
			mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 0, agentrt.Usage{}, 0)
			if n := mcCount(t, env.store, "r", agentrt.EventModelDispatched); n != 0 {
				t.Fatalf("%d model.dispatched events, want 0", n)
			}
		})
	}
}

// Limits.MaxOutputTokensPerCall fills a missing cap and lowers a larger one;
// a smaller cap is kept. A filled cap makes the request projectable.
func TestModel_OutputCapClampedToThePerCallLimit(t *testing.T) {
	for _, tc := range []struct{ asked, sent int64 }{{0, 64}, {1000, 64}, {10, 10}} {
		m := &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 1, OutputTokens: 1})}
		agent := &mcOnce{req: mcReq(tc.asked)}
		env := mcSetup(t, m, agentrt.ModelConfig{}, agent)
		run := env.start(t, "greet", mcLimits(func(l *agentrt.Limits) {
			l.MaxOutputTokensPerCall = 64
			l.MaxTotalTokens = 1 << 20
		}))
		mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		reqs := m.requests()
		if len(reqs) != 1 || reqs[0].MaxOutputTokens != tc.sent {
			t.Fatalf("asked %d: sent %+v, want one request capped at %d", tc.asked, reqs, tc.sent)
		}
	}
}

// Every attempt counts against MaxModelCalls, retries included: with two
// calls allowed and a model that keeps failing transiently, the third
// attempt is refused, without a wait before it.
func TestModel_EveryAttemptCountsAgainstMaxModelCalls(t *testing.T) {
	m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{}, &agentrt.TransientError{Err: errors.New("HTTP 503")}
	}}
	agent := &mcOnce{req: mcReq(20)}
	env := mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 5}, agent)
	run := env.start(t, "greet", mcLimits(func(l *agentrt.Limits) { l.MaxModelCalls = 2 }))
	mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitModelCalls)
	if n := len(m.requests()); n != 2 {
		t.Fatalf("model called %d times, want 2", n)
	}
	failed := mcWant{status: agentrt.ModelError, errPart: "HTTP 503"}
	mcRequireCalls(t, env.store, "r", failed, failed)
	mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 2, agentrt.Usage{}, 0)
	if w := env.sleep.Waits(); len(w) != 1 || w[0] != time.Second {
		t.Fatalf("waits %v, want one of 1s (none before the refused attempt)", w)
	}
}

// Transient failures are retried after max(backoff, Retry-After): a 7s
// Retry-After beats the 1s backoff; then the 2s backoff beats no
// Retry-After. Each attempt has its own row and counts as a call.
func TestModel_RetriesHonourRetryAfter(t *testing.T) {
	m := &mcModel{name: "m", GenerateFunc: func(_ context.Context, n int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		switch n {
		case 1:
			return agentrt.ModelResponse{}, &agentrt.TransientError{Err: errors.New("HTTP 429"), RetryAfter: 7 * time.Second}
		case 2:
			return agentrt.ModelResponse{}, &agentrt.TransientError{Err: errors.New("HTTP 502")}
		}
		return agentrt.ModelResponse{Text: "hello", StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}}
	agent := &mcOnce{req: mcReq(20)}
	env := mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 2}, agent)
	run := env.start(t, "greet", mcLimits(nil))
	mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if resp, _ := agent.result(); resp.Text != "hello" {
		t.Fatalf("reply %+v, want the third attempt's", resp)
	}
	if w := env.sleep.Waits(); len(w) != 2 || w[0] != 7*time.Second || w[1] != 2*time.Second {
		t.Fatalf("waits %v, want [7s 2s]", w)
	}
	mcRequireCalls(t, env.store, "r",
		mcWant{status: agentrt.ModelError, errPart: "HTTP 429"},
		mcWant{status: agentrt.ModelError, errPart: "HTTP 502"},
		mcWant{status: agentrt.ModelOK, usage: agentrt.Usage{InputTokens: 10, OutputTokens: 5}})
	for i, c := range mcCalls(t, env.store, "r") {
		if c.Attempt != i+1 {
			t.Errorf("row %d is attempt %d", i, c.Attempt)
		}
	}
	mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 3, agentrt.Usage{InputTokens: 10, OutputTokens: 5}, 0)
	if got := [2]int{mcCount(t, env.store, "r", agentrt.EventModelFailed), mcCount(t, env.store, "r", agentrt.EventModelCompleted)}; got != [2]int{2, 1} {
		t.Fatalf("model.failed, model.completed events: %v, want [2 1]", got)
	}
}

// Only transient failures are retried, and only MaxRetries times; zero
// means one attempt.
func TestModel_RetriesOnlyTransientUpToMaxRetries(t *testing.T) {
	transient := &agentrt.TransientError{Err: errors.New("HTTP 500")}
	for _, tc := range []struct {
		name     string
		retries  int
		err      error
		attempts int
		waits    []time.Duration
	}{
		{"zero means no retry", 0, transient, 1, nil},
		{"exhausted", 2, transient, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"permanent not retried", 3, errors.New("HTTP 400 bad request"), 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
				return agentrt.ModelResponse{}, tc.err
			}}
			agent := &mcOnce{req: mcReq(20)}
			env := mcSetup(t, m, agentrt.ModelConfig{MaxRetries: tc.retries}, agent)
			run := env.start(t, "greet", mcLimits(nil))
			mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonModelUnavailable)
			_, gerr := agent.result()
			var mu *agentrt.ModelUnavailableError
			if !errors.As(gerr, &mu) || mu.Attempts != tc.attempts || !errors.Is(gerr, tc.err) {
				t.Fatalf("Generate: %v, want ModelUnavailableError after %d attempts wrapping %v", gerr, tc.attempts, tc.err)
			}
			if n := len(m.requests()); n != tc.attempts {
				t.Fatalf("model called %d times, want %d", n, tc.attempts)
			}
			want := make([]mcWant, tc.attempts)
			for i := range want {
				want[i] = mcWant{status: agentrt.ModelError, errPart: "HTTP"}
			}
			mcRequireCalls(t, env.store, "r", want...)
			mcRequireTotals(t, kit.MustRun(t, env.store, "r"), tc.attempts, agentrt.Usage{}, 0)
			if w := env.sleep.Waits(); len(w) != len(tc.waits) || (len(w) > 0 && (w[0] != tc.waits[0] || w[1] != tc.waits[1])) {
				t.Fatalf("waits %v, want %v", w, tc.waits)
			}
		})
	}
}

// A retry whose wait cannot fit fails the run model_unavailable at once,
// with no wait and no second attempt: a Retry-After past MaxRetryAfter, a
// wait past the context's deadline, or one that reaches the elapsed or
// active time limit from when the attempt completed.
func TestModel_RetryWaitThatCannotFitIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		backoff    time.Duration
		callTakes  time.Duration // the fake clock moves this much during the attempt
		deadline   time.Duration // of the context given to Start; 0 for none
		limits     func(*agentrt.Limits)
		why        string
	}{
		{name: "Retry-After past MaxRetryAfter", retryAfter: 2 * time.Minute, why: "MaxRetryAfter"},
		{name: "context deadline", backoff: time.Hour, deadline: 30 * time.Minute, why: "deadline"},
		{name: "elapsed time", backoff: 2 * time.Minute, callTakes: 9 * time.Minute,
			limits: func(l *agentrt.Limits) { l.MaxElapsedTime = 10 * time.Minute }, why: "elapsed time"},
		{name: "active time", backoff: 2 * time.Minute, callTakes: 9 * time.Minute,
			limits: func(l *agentrt.Limits) { l.MaxActiveTime = 10 * time.Minute }, why: "active time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env *mcEnv
			m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
				env.clock.Advance(tc.callTakes)
				return agentrt.ModelResponse{}, &agentrt.TransientError{Err: errors.New("HTTP 529 overloaded"), RetryAfter: tc.retryAfter}
			}}
			agent := &mcOnce{req: mcReq(20)}
			env = mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 5, Backoff: tc.backoff}, agent)
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			run, err := env.drv.StartWithID(ctx, "r", "greet", mcLimits(tc.limits))
			if err != nil {
				t.Fatal(err)
			}
			mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonModelUnavailable)
			_, gerr := agent.result()
			var mu *agentrt.ModelUnavailableError
			var te *agentrt.TransientError
			if !errors.As(gerr, &mu) || mu.Attempts != 1 || !errors.As(gerr, &te) || !strings.Contains(gerr.Error(), tc.why) {
				t.Fatalf("Generate: %v, want ModelUnavailableError after 1 attempt naming %q and wrapping the transient error", gerr, tc.why)
			}
			if w := env.sleep.Waits(); len(w) != 0 {
				t.Fatalf("waited %v, want no wait", w)
			}
			if n := len(m.requests()); n != 1 {
				t.Fatalf("model called %d times, want 1", n)
			}
			mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelError, errPart: "HTTP 529"})
			mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 1, agentrt.Usage{}, 0)
		})
	}

	// The same model and limits with a wait that fits do wait and retry.
	var env *mcEnv
	m := &mcModel{name: "m", GenerateFunc: func(_ context.Context, n int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		env.clock.Advance(7 * time.Minute)
		if n == 1 {
			return agentrt.ModelResponse{}, &agentrt.TransientError{Err: errors.New("HTTP 529 overloaded")}
		}
		return agentrt.ModelResponse{StopReason: agentrt.StopEndTurn}, nil
	}}
	env = mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 5, Backoff: 2 * time.Minute}, &mcOnce{req: mcReq(20)})
	run := env.start(t, "greet", mcLimits(func(l *agentrt.Limits) { l.MaxElapsedTime = 10 * time.Minute }))
	mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if w := env.sleep.Waits(); len(w) != 1 || w[0] != 2*time.Minute {
		t.Fatalf("waits %v, want [2m]", w)
	}
}

// An attempt that ends after the request may have been served (a
// connection cut or closed, a per-attempt timeout) is ambiguous: it is
// charged the estimate (input estimate plus the output cap, priced) and
// retried.
func TestModel_AmbiguousAttemptChargedConservatively(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		err     func(ctx context.Context) error
	}{
		{name: "EOF", err: func(context.Context) error { return io.EOF }},
		{name: "unexpected EOF", err: func(context.Context) error { return io.ErrUnexpectedEOF }},
		{name: "connection reset", err: func(context.Context) error { return reset }},
		{name: "broken pipe", err: func(context.Context) error { return &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE} }},
		{name: "closed connection", err: func(context.Context) error { return net.ErrClosed }},
		{name: "reset the adapter called transient", err: func(context.Context) error { return &agentrt.TransientError{Err: reset} }},
		{name: "per-attempt timeout", timeout: time.Nanosecond, err: func(ctx context.Context) error {
			<-ctx.Done() // the attempt's own deadline, a nanosecond away
			return ctx.Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real := agentrt.Usage{InputTokens: 10, OutputTokens: 5}
			m := &mcModel{name: "m", GenerateFunc: func(ctx context.Context, n int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
				if n == 1 {
					return agentrt.ModelResponse{}, tc.err(ctx)
				}
				return agentrt.ModelResponse{Text: "hello", StopReason: agentrt.StopEndTurn, Usage: real}, nil
			}}
			agent := &mcOnce{req: mcReq(20)}
			env := mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 1, CallTimeout: tc.timeout, Prices: agentrt.PriceTable{"m": mcPrice}}, agent)
			run := env.start(t, "greet", mcLimits(nil))
			mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
			est := mcEstimate(mcReq(20))
			estCost := agentrt.CostOf(mcPrice, est)
			if est.InputTokens <= 0 || est.OutputTokens != 20 || estCost <= 0 {
				t.Fatalf("estimate %+v cost %d", est, estCost)
			}
			mcRequireCalls(t, env.store, "r",
				mcWant{status: agentrt.ModelAmbiguous, usage: est, cost: estCost},
				mcWant{status: agentrt.ModelOK, usage: real, cost: agentrt.CostOf(mcPrice, real)})
			mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 2, mcAdd(est, real), estCost+agentrt.CostOf(mcPrice, real))
			if w := env.sleep.Waits(); len(w) != 1 {
				t.Fatalf("waits %v, want one before the retry", w)
			}
		})
	}

	// Each attempt is sent with a deadline of CallTimeout, two minutes by
	// default.
	t.Run("attempt deadline", func(t *testing.T) {
		for _, tc := range []struct{ set, want time.Duration }{{0, 2 * time.Minute}, {90 * time.Second, 90 * time.Second}} {
			var left time.Duration
			m := &mcModel{name: "m", GenerateFunc: func(ctx context.Context, _ int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
				if dl, ok := ctx.Deadline(); ok {
					left = time.Until(dl)
				}
				return agentrt.ModelResponse{StopReason: agentrt.StopEndTurn}, nil
			}}
			env := mcSetup(t, m, agentrt.ModelConfig{CallTimeout: tc.set}, &mcOnce{req: mcReq(20)})
			env.start(t, "greet", mcLimits(nil))
			if left <= tc.want-time.Minute/2 || left > tc.want {
				t.Fatalf("CallTimeout %s: the attempt had %s left, want just under %s", tc.set, left, tc.want)
			}
		}
	})

	// The caller giving up with the request in flight: the attempt is
	// ambiguous and charged, on a context the cancellation does not reach,
	// and it is not retried.
	t.Run("caller cancelled in flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := &mcModel{name: "m", GenerateFunc: func(ctx context.Context, _ int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
			cancel()
			return agentrt.ModelResponse{}, ctx.Err()
		}}
		agent := &mcOnce{req: mcReq(20)}
		env := mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 3, Prices: agentrt.PriceTable{"m": mcPrice}}, agent)
		_, err := env.drv.StartWithID(ctx, "r", "greet", mcLimits(nil))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start: %v, want context.Canceled", err)
		}
		if _, gerr := agent.result(); !errors.Is(gerr, context.Canceled) {
			t.Fatalf("Generate: %v, want context.Canceled", gerr)
		}
		if n := len(m.requests()); n != 1 {
			t.Fatalf("model called %d times, want 1", n)
		}
		est := mcEstimate(mcReq(20))
		estCost := agentrt.CostOf(mcPrice, est)
		mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelAmbiguous, usage: est, cost: estCost, errPart: "cancel"})
		run := kit.MustRun(t, env.store, "r")
		mcRequireTotals(t, run, 1, est, estCost)
		if run.Status != agentrt.RunRunning {
			t.Fatalf("run is %s, want RUNNING with its step in flight for Resume", run.Status)
		}
		if w := env.sleep.Waits(); len(w) != 0 {
			t.Fatalf("waits %v, want none", w)
		}
		if n := mcCount(t, env.store, "r", agentrt.EventModelFailed); n != 1 {
			t.Fatalf("%d model.failed events, want 1", n)
		}
	})
}

// A reply the provider served but that cannot be used is charged the usage
// it carries and is not retried, since a retry is billed again.
func TestModel_ServedErrorIsChargedAndNotRetried(t *testing.T) {
	served := agentrt.Usage{InputTokens: 1000, OutputTokens: 20, CachedInputTokens: 400}
	m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		return agentrt.ModelResponse{}, &agentrt.ServedError{Usage: served, Err: errors.New("the reply holds no choice")}
	}}
	env, agent := mcStartUnavailable(t, m)
	_, gerr := agent.result()
	var mu *agentrt.ModelUnavailableError
	var se *agentrt.ServedError
	if !errors.As(gerr, &mu) || mu.Attempts != 1 || !errors.As(gerr, &se) {
		t.Fatalf("Generate: %v, want ModelUnavailableError after 1 attempt wrapping the ServedError", gerr)
	}
	cost := agentrt.CostOf(mcPrice, served) // 600 + 200 + 60
	if cost != 860 {
		t.Fatalf("cost %d, want 860", cost)
	}
	mcRequireChargedOnce(t, env, m, served, cost, "no choice")
}

// mcStartUnavailable starts run "r", one call of mcReq(20) to m with three
// retries allowed and mcPrice, and requires it to fail model_unavailable.
// It returns the run's environment and the agent holding Generate's answer.
func mcStartUnavailable(t *testing.T, m *mcModel) (*mcEnv, *mcOnce) {
	t.Helper()
	agent := &mcOnce{req: mcReq(20)}
	env := mcSetup(t, m, agentrt.ModelConfig{MaxRetries: 3, Prices: agentrt.PriceTable{"m": mcPrice}}, agent)
	run := env.start(t, "greet", mcLimits(nil))
	mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonModelUnavailable)
	return env, agent
}

// mcRequireChargedOnce requires run "r" to hold one errored call, charged
// usage at cost with errPart in its error, in its totals too, and m to have
// been sent it once with no retry wait.
func mcRequireChargedOnce(t *testing.T, env *mcEnv, m *mcModel, usage agentrt.Usage, cost agentrt.Micros, errPart string) {
	t.Helper()
	mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelError, usage: usage, cost: cost, errPart: errPart})
	mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 1, usage, cost)
	if n := len(m.requests()); n != 1 {
		t.Fatalf("model called %d times, want 1", n)
	}
	if w := env.sleep.Waits(); len(w) != 0 {
		t.Fatalf("waits %v, want none", w)
	}
}

// Usage that cannot be believed, on a reply or carried by a ServedError, is
// charged the conservative estimate; the reply is discarded, the attempt is
// not retried, and the run fails model_unavailable.
func TestModel_UnusableUsageIsChargedTheEstimate(t *testing.T) {
	ok := func(u agentrt.Usage) func() (agentrt.ModelResponse, error) {
		return func() (agentrt.ModelResponse, error) {
			return agentrt.ModelResponse{Text: "believe me", StopReason: agentrt.StopEndTurn, Usage: u}, nil
		}
	}
	for _, tc := range []struct {
		name  string
		reply func() (agentrt.ModelResponse, error)
	}{
		{"negative input", ok(agentrt.Usage{InputTokens: -1, OutputTokens: 5})},
		{"negative output", ok(agentrt.Usage{InputTokens: 1, OutputTokens: -5})},
		{"cached more than input", ok(agentrt.Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 11})},
		{"too large", ok(agentrt.Usage{InputTokens: 10, OutputTokens: math.MaxInt64})},
		{"served error wrapping ErrUnusableUsage", func() (agentrt.ModelResponse, error) {
			return agentrt.ModelResponse{}, providers.Unusable(&providers.UsageError{Field: "usage.prompt_tokens", Reason: "is not a non-negative integer"})
		}},
		{"served error with negative usage", func() (agentrt.ModelResponse, error) {
			return agentrt.ModelResponse{}, &agentrt.ServedError{Usage: agentrt.Usage{InputTokens: -100}, Err: errors.New("refused")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mcModel{name: "m", GenerateFunc: func(context.Context, int, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
				return tc.reply()
			}}
			env, agent := mcStartUnavailable(t, m)
			resp, gerr := agent.result()
			var mu *agentrt.ModelUnavailableError
			if !errors.As(gerr, &mu) || !errors.Is(gerr, agentrt.ErrUnusableUsage) {
				t.Fatalf("Generate: %v, want ModelUnavailableError matching ErrUnusableUsage", gerr)
			}
			if resp.Text != "" || resp.Usage != (agentrt.Usage{}) {
				t.Fatalf("reply %+v handed on, want it discarded", resp)
			}
			est := mcEstimate(mcReq(20))
			estCost := agentrt.CostOf(mcPrice, est)
			mcRequireChargedOnce(t, env, m, est, estCost, "unusable usage")
		})
	}
}

// Totals already near the largest int64 saturate when a call is charged,
// rather than wrap negative; and a projection over such totals saturates
// too, so it refuses rather than wraps under the limit.
func TestModel_TotalsSaturateRatherThanWrap(t *testing.T) {
	const near = math.MaxInt64 - 5
	// seed charges the run as if earlier calls had used nearly everything.
	seed := func(ctx context.Context, st *sqlite.Store, runID string) error {
		_, err := st.Update(ctx, func(tx agentrt.Tx) error {
			return tx.RunUpdate(agentrt.RunUpdate{ID: runID, AddUsage: agentrt.Usage{InputTokens: near, OutputTokens: near, CachedInputTokens: near}, AddCost: near})
		})
		return err
	}
	used := agentrt.Usage{InputTokens: 100, OutputTokens: 100, CachedInputTokens: 50}

	t.Run("charge", func(t *testing.T) {
		var env *mcEnv
		agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if err := seed(ctx, env.store, in.Run.ID); err != nil {
				return agentrt.Decision{}, err
			}
			if _, err := in.Model.Generate(ctx, mcReq(200)); err != nil {
				return agentrt.Decision{}, err
			}
			return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
		})
		env = mcSetup(t, &mcModel{name: "m", GenerateFunc: mcReply(used)}, agentrt.ModelConfig{Prices: agentrt.PriceTable{"m": mcPrice}}, agent)
		run := env.start(t, "greet", mcLimits(nil))
		mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
		mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelOK, usage: used, cost: agentrt.CostOf(mcPrice, used)})
		max := agentrt.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64, CachedInputTokens: math.MaxInt64}
		mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 1, max, math.MaxInt64)
	})

	t.Run("projection", func(t *testing.T) {
		var env *mcEnv
		agent := &mcOnce{req: mcReq(200)}
		seeded := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if err := seed(ctx, env.store, in.Run.ID); err != nil {
				return agentrt.Decision{}, err
			}
			return agent.Decide(ctx, in)
		})
		m := &mcModel{name: "m", GenerateFunc: mcReply(used)}
		env = mcSetup(t, m, agentrt.ModelConfig{Prices: agentrt.PriceTable{"m": mcPrice}}, seeded)
		run := env.start(t, "greet", mcLimits(func(l *agentrt.Limits) {
			l.MaxTotalTokens = math.MaxInt64 - 1
			l.MaxEstimatedCost = math.MaxInt64 - 1
		}))
		mcRequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitTokens)
		if n := len(m.requests()); n != 0 {
			t.Fatalf("model called %d times, want 0", n)
		}
		mcRequireCalls(t, env.store, "r")
	})
}

// Cost is floored per part and computed in 128 bits: products past 64 bits
// still divide correctly, and a cost past the largest Micros saturates.
func TestModel_CostIsFlooredInWideArithmetic(t *testing.T) {
	wide := func(n, per int64) agentrt.Micros {
		q := new(big.Int).Mul(big.NewInt(n), big.NewInt(per))
		q.Quo(q, big.NewInt(1_000_000))
		if !q.IsInt64() {
			return math.MaxInt64
		}
		return agentrt.Micros(q.Int64())
	}
	for _, tc := range []struct {
		name string
		p    agentrt.Price
		u    agentrt.Usage
		want agentrt.Micros
	}{
		{"floored per part", agentrt.Price{InputPerMTok: 1_500_000, CachedInputPerMTok: 500_000, OutputPerMTok: 2_500_000},
			agentrt.Usage{InputTokens: 3, CachedInputTokens: 1, OutputTokens: 3}, 3 + 0 + 7},
		{"under a micro", agentrt.Price{InputPerMTok: 999_999}, agentrt.Usage{InputTokens: 1}, 0},
		{"product past 64 bits", agentrt.Price{InputPerMTok: 1 << 30}, agentrt.Usage{InputTokens: 1 << 40}, wide(1<<40, 1<<30)},
		{"quotient past int64", agentrt.Price{OutputPerMTok: math.MaxInt64}, agentrt.Usage{OutputTokens: 1 << 40}, math.MaxInt64},
		{"sum past int64", agentrt.Price{InputPerMTok: math.MaxInt64, OutputPerMTok: math.MaxInt64},
			agentrt.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, math.MaxInt64},
		{"negatives are zero", agentrt.Price{InputPerMTok: -5, OutputPerMTok: 1_000_000},
			agentrt.Usage{InputTokens: 100, OutputTokens: -3}, 0},
		{"free", agentrt.Price{}, agentrt.Usage{InputTokens: 1 << 40, OutputTokens: 1 << 40}, 0},
	} {
		if got := agentrt.CostOf(tc.p, tc.u); got != tc.want {
			t.Errorf("%s: cost %d, want %d", tc.name, got, tc.want)
		}
	}
	if w := wide(1<<40, 1<<30); w != 1180591620717411 {
		t.Fatalf("big.Int reference gives %d", w)
	}
}

// The input projection bounds the tokens a byte-level BPE tokenizer can
// make of the request (it was the JSON length over three, which text at one
// token per byte crosses): the JSON length plus the allowances docs/limits.md
// states, 1024 per request, 32 per message, 16 per block and 128 per tool,
// with a tool's schema and a tool use's input counted three times, even
// when the input is not JSON.
func TestModel_EstimateInputTokensIsAnUpperBound(t *testing.T) {
	req := mcReq(20)
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := agentrt.EstimateInputTokens(req), int64(len(b))+1024+32+16; got != want {
		t.Fatalf("projection %d, want %d", got, want)
	}
	// Text at one token per byte stays within it.
	hostile := mcReq(20)
	hostile.Messages[0].Content[0].Text = hostileText(30_000)
	if got := agentrt.EstimateInputTokens(hostile); got < 30_000 {
		t.Fatalf("projection of 30,000 bytes of emoji and rare ideographs: %d", got)
	}
	// A tool's schema is counted three times, with the tool's allowance.
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	tooled := mcReq(20)
	tooled.Tools = []agentrt.ToolSpec{{Name: "read", Description: "Read a file.", InputSchema: schema}}
	if b, err = json.Marshal(tooled); err != nil {
		t.Fatal(err)
	}
	if got, want := agentrt.EstimateInputTokens(tooled), int64(len(b))+1024+32+16+128+2*int64(len(schema)); got != want {
		t.Fatalf("projection with a tool %d, want %d", got, want)
	}
	// A tool input that is not JSON still counts its bytes, three times.
	bad := mcReq(20)
	bad.Messages = append(bad.Messages, agentrt.Message{Role: agentrt.RoleAssistant, Content: []agentrt.ContentBlock{
		{Type: agentrt.BlockToolUse, Name: "echo", Input: json.RawMessage(strings.Repeat("x", 3000))}}})
	if got := agentrt.EstimateInputTokens(bad); got < 9000 {
		t.Fatalf("projection of a request with 3000 bytes of raw input: %d", got)
	}
}

// A loop that has lost its lease sends no model request: another owner took
// the run over while the agent was deciding, and Generate is refused before
// anything is written.
func TestModel_LostLeaseRefusesDispatch(t *testing.T) {
	var env *mcEnv
	var gerr error
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		_, err := env.store.Update(ctx, func(tx agentrt.Tx) error {
			return tx.RunUpdate(agentrt.RunUpdate{ID: in.Run.ID, SetLease: true, LeaseOwner: "other-process",
				LeaseExpiresAt: time.Now().Add(time.Hour), BumpGeneration: true})
		})
		if err != nil {
			return agentrt.Decision{}, err
		}
		_, gerr = in.Model.Generate(ctx, mcReq(20))
		return agentrt.Decision{}, gerr
	})
	m := &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 1, OutputTokens: 1})}
	env = mcSetup(t, m, agentrt.ModelConfig{}, agent)
	_, err := env.drv.StartWithID(context.Background(), "r", "greet", mcLimits(nil))
	if !errors.Is(err, agentrt.ErrLeaseLost) || !errors.Is(gerr, agentrt.ErrLeaseLost) {
		t.Fatalf("Start: %v; Generate: %v; want ErrLeaseLost from both", err, gerr)
	}
	if n := len(m.requests()); n != 0 {
		t.Fatalf("model called %d times, want 0", n)
	}
	mcRequireCalls(t, env.store, "r")
	run := kit.MustRun(t, env.store, "r")
	mcRequireTotals(t, run, 0, agentrt.Usage{}, 0)
	if run.LeaseOwner != "other-process" || run.Status != agentrt.RunRunning {
		t.Fatalf("run %s leased by %q, want RUNNING under the other owner", run.Status, run.LeaseOwner)
	}
	if n := mcCount(t, env.store, "r", agentrt.EventModelDispatched); n != 0 {
		t.Fatalf("%d model.dispatched events, want 0", n)
	}
}

// Concurrent Generate calls in one step cannot all pass one check: with
// room for two requests, two in flight hold their reservations and a third
// is refused, though nothing has been recorded against the run yet.
func TestModel_ConcurrentCallsCannotAllPassTheCheck(t *testing.T) {
	req := mcReq(20)
	est := mcEstimate(req)
	each := est.InputTokens + est.OutputTokens
	entered := make(chan struct{})
	release := make(chan struct{})
	m := &mcModel{name: "m", GenerateFunc: func(_ context.Context, n int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		if n <= 2 { // a third call, which must not come, returns at once
			entered <- struct{}{}
			<-release
		}
		return agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}}
	var thirdErr error
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = in.Model.Generate(ctx, req)
			}()
			<-entered // this one is in flight before the next starts
		}
		_, thirdErr = in.Model.Generate(ctx, req)
		close(release)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return agentrt.Decision{}, err
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	env := mcSetup(t, m, agentrt.ModelConfig{}, agent)
	run := env.start(t, "greet", mcLimits(func(l *agentrt.Limits) {
		l.MaxTotalTokens = 2*each + each/2
	}))
	var le *agentrt.LimitError
	if !errors.As(thirdErr, &le) || le.Reason != agentrt.ReasonLimitTokens || !strings.Contains(le.Detail, "in flight") {
		t.Fatalf("third call: %v, want a token LimitError counting the calls in flight", thirdErr)
	}
	mcRequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if n := len(m.requests()); n != 2 {
		t.Fatalf("model called %d times, want 2", n)
	}
	ok := mcWant{status: agentrt.ModelOK, usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}
	mcRequireCalls(t, env.store, "r", ok, ok)
	mcRequireTotals(t, kit.MustRun(t, env.store, "r"), 2, agentrt.Usage{InputTokens: 2, OutputTokens: 2}, 0)
}

// An operator cancelling the run while a request is in flight does not lose
// what the request cost: the outcome is recorded late, against the
// cancelled run, and the run stays cancelled.
func TestModel_OutcomeRecordedWhenTheRunEndedInFlight(t *testing.T) {
	var env *mcEnv
	used := agentrt.Usage{InputTokens: 40, OutputTokens: 8}
	m := &mcModel{name: "m", GenerateFunc: func(ctx context.Context, _ int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		if _, err := env.drv.Cancel(ctx, "r", "operator", "stop"); err != nil {
			t.Errorf("cancel: %v", err)
		}
		return agentrt.ModelResponse{StopReason: agentrt.StopEndTurn, Usage: used}, nil
	}}
	env = mcSetup(t, m, agentrt.ModelConfig{Prices: agentrt.PriceTable{"m": mcPrice}}, &mcOnce{req: mcReq(20)})
	run := env.start(t, "greet", mcLimits(nil))
	mcRequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	cost := agentrt.CostOf(mcPrice, used)
	mcRequireCalls(t, env.store, "r", mcWant{status: agentrt.ModelOK, usage: used, cost: cost})
	stored := kit.MustRun(t, env.store, "r")
	mcRequireEnded(t, stored, agentrt.RunCancelled, agentrt.ReasonOperatorCancelled)
	mcRequireTotals(t, stored, 1, used, cost)
	evs, err := env.store.ListEvents(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	var late bool
	for _, e := range evs {
		if e.Type == agentrt.EventModelCompleted {
			var p struct{ Late bool }
			late = json.Unmarshal(e.Payload, &p) == nil && p.Late
		}
	}
	if !late {
		t.Fatal("no model.completed event marked late")
	}
}
