package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// budgetModel counts the requests that reach it and answers each with
// usage, or fails it after it may have been sent.
type budgetModel struct {
	n     atomic.Int64
	usage agentrt.Usage
	cut   bool
}

func (m *budgetModel) Name() string     { return "m" }
func (m *budgetModel) Provider() string { return "scripted" }
func (m *budgetModel) Generate(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	m.n.Add(1)
	if m.cut {
		return agentrt.ModelResponse{}, io.ErrUnexpectedEOF
	}
	return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn, Usage: m.usage}, nil
}

var (
	budgetPrice   = agentrt.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}
	budgetRequest = agentrt.ModelRequest{MaxOutputTokens: 50,
		Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hello"}}}}}
)

func budgetBound() agentrt.Amount {
	u := agentrt.Usage{InputTokens: agentrt.EstimateInputTokens(budgetRequest), OutputTokens: budgetRequest.MaxOutputTokens}
	return agentrt.Amount{Cost: budgetPrice.Cost(u), Tokens: u.InputTokens + u.OutputTokens}
}

// clock is a clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// budgetRun starts a run labelled tenant=acme whose one step calls m once
// with budgetRequest, and returns it and what Generate returned.
func budgetRun(t *testing.T, st agentrt.Store, m agentrt.Model, now func() time.Time, egress *agentrt.EgressRules, id string) (agentrt.Run, error) {
	t.Helper()
	var genErr error
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if _, err := in.Model.Generate(ctx, budgetRequest); err != nil {
			genErr = err
			return agentrt.Decision{}, err
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Now: now,
		Model: &agentrt.ModelConfig{Model: m}, Prices: agentrt.PriceTable{"m": budgetPrice}, Egress: egress}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	limits := agentrt.DefaultLimits()
	limits.Labels = "tenant=acme"
	r, err := d.StartWithID(context.Background(), id, "call the model", limits)
	if err != nil {
		t.Fatal(err)
	}
	return r, genErr
}

func window(t *testing.T, st agentrt.Store, b agentrt.Budget) []agentrt.BudgetUsage {
	t.Helper()
	ws, err := st.(agentrt.BudgetReader).ListBudgetUsage(context.Background(), b.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// A call settles at the usage the provider reported, past its reservation,
// which exhausts the budget: the next call is refused with limit_budget
// before it is sent, and the settlement names the price version.
func budgetSettlesTruthfully(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	c := &clock{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	bound := budgetBound()
	b, err := agentrt.Operator{Store: st, Now: c.Now}.AddBudget(context.Background(), agentrt.NewBudget{Name: "acme", Scope: "tenant=acme",
		Window: agentrt.WindowDay, MaxCost: 2 * bound.Cost, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	actual := agentrt.Usage{InputTokens: bound.Tokens, OutputTokens: 10 * budgetRequest.MaxOutputTokens}
	m := &budgetModel{usage: actual}
	if r, err := budgetRun(t, st, m, c.Now, nil, "over"); err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("first run: %s %v", r.Status, err)
	}
	want := agentrt.Amount{Cost: budgetPrice.Cost(actual), Tokens: actual.InputTokens + actual.OutputTokens}
	if ws := window(t, st, b); len(ws) != 1 || ws[0].Settled != want || ws[0].Reserved != (agentrt.Amount{}) || want.Cost <= bound.Cost {
		t.Fatalf("window %+v, want %+v settled (past the bound %+v)", ws, want, bound)
	}
	rs, err := st.(agentrt.BudgetReader).ListReservations(context.Background(), agentrt.ReservationFilter{RunID: "over"}, 10)
	v, _ := agentrt.NewPriceVersion(agentrt.PriceTable{"m": budgetPrice})
	if err != nil || len(rs) != 1 || rs[0].Actual != want || rs[0].PriceVersion != v.ID || rs[0].Generation != 1 {
		t.Fatalf("reservations %+v, %v", rs, err)
	}
	r, genErr := budgetRun(t, st, m, c.Now, nil, "refused")
	var le *agentrt.LimitError
	if !errors.As(genErr, &le) || le.Reason != agentrt.ReasonLimitBudget || r.Reason != agentrt.ReasonLimitBudget || m.n.Load() != 1 {
		t.Fatalf("second run: %s %s, Generate %v, %d requests; want limit_budget before transport", r.Status, r.Reason, genErr, m.n.Load())
	}
	// The next day's window starts empty.
	c.Add(24 * time.Hour)
	if r, err := budgetRun(t, st, m, c.Now, nil, "next-day"); err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("the next day: %s %v", r.Status, err)
	}
	if ws := window(t, st, b); len(ws) != 2 || ws[1].Settled != want {
		t.Fatalf("windows %+v", ws)
	}
	verify(t, st)
}

// A call cut off after it may have been sent leaves its reservation
// uncertain, holding its capacity: another call is refused, and reconcile
// settles exactly the operator's figure and releases the rest.
func budgetUncertainHolds(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	c := &clock{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	bound := budgetBound()
	op := agentrt.Operator{Store: st, Now: c.Now}
	b, err := op.AddBudget(context.Background(), agentrt.NewBudget{Name: "acme", Scope: "tenant=acme", Window: agentrt.WindowNone,
		MaxCost: bound.Cost + bound.Cost/2, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	cut := &budgetModel{cut: true}
	if r, _ := budgetRun(t, st, cut, c.Now, nil, "cut"); r.Status != agentrt.RunFailed {
		t.Fatalf("cut run: %s", r.Status)
	}
	rs, err := st.(agentrt.BudgetReader).ListReservations(context.Background(), agentrt.ReservationFilter{RunID: "cut"}, 10)
	if err != nil || len(rs) != 1 || rs[0].Status != agentrt.ReservationUncertain {
		t.Fatalf("reservations %+v, %v; want one uncertain", rs, err)
	}
	if ws := window(t, st, b); ws[0].Uncertain != bound {
		t.Fatalf("window %+v, want %+v uncertain", ws, bound)
	}
	ok := &budgetModel{usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}
	if r, _ := budgetRun(t, st, ok, c.Now, nil, "blocked"); r.Reason != agentrt.ReasonLimitBudget || ok.n.Load() != 0 {
		t.Fatalf("a call while the uncertain one holds: %s, %d requests", r.Reason, ok.n.Load())
	}
	figure := agentrt.Amount{Cost: 5, Tokens: 7}
	if _, err := op.ReconcileReservation(context.Background(), rs[0].CallID, figure, "bob", "usage export"); err != nil {
		t.Fatal(err)
	}
	if ws := window(t, st, b); ws[0].Uncertain != (agentrt.Amount{}) || ws[0].Settled != figure || ws[0].Reserved != (agentrt.Amount{}) {
		t.Fatalf("after reconcile: %+v", ws)
	}
	if r, err := budgetRun(t, st, ok, c.Now, nil, "after"); err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("after reconcile: %s %v", r.Status, err)
	}
	verify(t, st)
}

// Egress rules that do not allow the model's provider deny the request
// before transport: the model receives nothing, no call is dispatched, and
// the denied manifest is in the chain.
func egressDenied(t *testing.T, open func(*testing.T) agentrt.Store) {
	st := closeLater(t, open(t))
	m := &budgetModel{usage: agentrt.Usage{InputTokens: 1, OutputTokens: 1}}
	_, genErr := budgetRun(t, st, m, nil, &agentrt.EgressRules{Providers: []string{"openai"}}, "denied")
	if !errors.Is(genErr, agentrt.ErrEgressDenied) || m.n.Load() != 0 {
		t.Fatalf("Generate %v with %d requests sent; want ErrEgressDenied and none", genErr, m.n.Load())
	}
	evs, err := st.ListEvents(context.Background(), "denied")
	if err != nil {
		t.Fatal(err)
	}
	denied := 0
	for _, e := range evs {
		switch e.Type {
		case agentrt.EventModelDispatched:
			t.Fatalf("a denied request was dispatched")
		case agentrt.EventEgressDenied:
			denied++
			if !strings.Contains(string(e.Payload), `"provider":"scripted"`) || !strings.Contains(string(e.Payload), `"sha256":"`) {
				t.Errorf("denied manifest %s", e.Payload)
			}
		}
	}
	if denied != 1 {
		t.Fatalf("%d egress.denied events", denied)
	}
	verify(t, st)
}
