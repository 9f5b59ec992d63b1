package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/storetest"
)

// 32 runs, each started by a goroutine of its own on one SQLite store,
// share one day budget sized for a third of their calls: exactly as many
// calls as the ceiling holds are reserved, the rest are refused with
// limit_budget before any request is sent, the amount held never passes
// the ceiling at any commit, and the chain verifies.
func TestBudget_ConcurrentRunsNeverReserveBeyondTheCeiling(t *testing.T) {
	st := openStore(t)
	storetest.BudgetRace{Store: st, Engines: []agentrt.Store{st}, Runs: 32}.Run(t)
}

// bgEnv is a store with one budget, and drivers on it with an injected
// clock and a counting model whose usage the test sets.
type bgEnv struct {
	t     *testing.T
	store *sqlite.Store
	clock *kit.FakeClock
	op    agentrt.Operator
}

func newBgEnv(t *testing.T) *bgEnv {
	st := openStore(t)
	clock := kit.ClockAt(time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC))
	return &bgEnv{t: t, store: st, clock: clock, op: agentrt.Operator{Store: st, Now: clock.Now}}
}

// driver makes a driver whose agent calls the model once with req and
// completes, charging at prices.
func (e *bgEnv) driver(m agentrt.Model, prices agentrt.PriceTable, req agentrt.ModelRequest) *agentrt.Driver {
	e.t.Helper()
	agent := &mcOnce{req: req}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: e.store, Policy: agentrt.DefaultPolicy(),
		Model: &agentrt.ModelConfig{Model: m}, Prices: prices, Now: e.clock.Now}, Agent: agent})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *bgEnv) budget(n agentrt.NewBudget) agentrt.Budget {
	e.t.Helper()
	n.By = "alice"
	b, err := e.op.AddBudget(context.Background(), n)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *bgEnv) start(d *agentrt.Driver, id, labels string) agentrt.Run {
	e.t.Helper()
	l := agentrt.DefaultLimits()
	l.Labels = labels
	r, err := d.StartWithID(context.Background(), id, "call the model", l)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *bgEnv) windows(b agentrt.Budget) []agentrt.BudgetUsage {
	e.t.Helper()
	ws, err := e.store.ListBudgetUsage(context.Background(), b.ID, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return ws
}

func (e *bgEnv) reservations(f agentrt.ReservationFilter) []agentrt.BudgetReservation {
	e.t.Helper()
	rs, err := e.store.ListReservations(context.Background(), f, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

var bgPrice = agentrt.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}

// bgBound is the upper bound the caller reserves for req at bgPrice.
func bgBound(req agentrt.ModelRequest) agentrt.Amount {
	u := agentrt.Usage{InputTokens: agentrt.EstimateInputTokens(req), OutputTokens: req.MaxOutputTokens}
	return agentrt.Amount{Cost: bgPrice.Cost(u), Tokens: u.InputTokens + u.OutputTokens}
}

// A provider reports ten times the output cap (a broken or generous cap):
// the call is settled at what it reported, past its reservation, and that
// exhausts the budget, which then refuses the next run's call before it is
// sent. Nothing is hidden: the model_calls row, the reservation, the
// window and the model.completed event all hold the actual figure.
func TestBudget_ActualUsageBeyondTheEstimateIsRecordedTruthfully(t *testing.T) {
	e := newBgEnv(t)
	req := mcReq(50)
	bound := bgBound(req)
	actual := agentrt.Usage{InputTokens: agentrt.EstimateInputTokens(req), OutputTokens: 500}
	actualCost := bgPrice.Cost(actual)
	if actualCost <= bound.Cost {
		t.Fatalf("actual %d is not beyond the bound %d", actualCost, bound.Cost)
	}
	b := e.budget(agentrt.NewBudget{Name: "acme", Scope: "tenant=acme", Window: agentrt.WindowNone, MaxCost: bound.Cost * 2})
	m := &mcModel{name: "m", GenerateFunc: mcReply(actual)}
	prices := agentrt.PriceTable{"m": bgPrice}
	run := e.start(e.driver(m, prices, req), "r1", "tenant=acme")
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)

	calls := mcCalls(t, e.store, "r1")
	if len(calls) != 1 || calls[0].Cost != actualCost || calls[0].Usage != actual {
		t.Fatalf("model_calls %+v, want one at the actual %d micros", calls, actualCost)
	}
	rs := e.reservations(agentrt.ReservationFilter{RunID: "r1"})
	wantActual := agentrt.Amount{Cost: actualCost, Tokens: actual.InputTokens + actual.OutputTokens}
	if len(rs) != 1 || rs[0].Status != agentrt.ReservationSettled || rs[0].Reserved != bound || rs[0].Actual != wantActual {
		t.Fatalf("reservations %+v, want one settled at %+v having reserved %+v", rs, wantActual, bound)
	}
	ws := e.windows(b)
	if len(ws) != 1 || ws[0].Settled != wantActual || ws[0].Reserved != (agentrt.Amount{}) {
		t.Fatalf("windows %+v, want settled %+v and nothing reserved", ws, wantActual)
	}
	ev := kit.EventsOf(t, e.store, "r1", agentrt.EventModelCompleted)
	if len(ev) != 1 || !strings.Contains(string(ev[0].Payload), fmt.Sprintf(`"actual":{"cost_micros":%d,`, actualCost)) {
		t.Fatalf("model.completed does not record the actual cost: %v", ev)
	}
	// 1100 of 1200 held by... the settled figure: a second bound does not fit.
	if actualCost+bound.Cost <= b.MaxCost {
		t.Fatalf("test sizes: %d + %d fits %d", actualCost, bound.Cost, b.MaxCost)
	}
	n := len(m.requests())
	run = e.start(e.driver(m, prices, req), "r2", "tenant=acme")
	kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitBudget)
	if !strings.Contains(run.ReasonDetail, `"acme"`) {
		t.Errorf("the refusal does not name the budget: %s", run.ReasonDetail)
	}
	if len(m.requests()) != n {
		t.Errorf("the refused call reached the model")
	}
	if got := mcCalls(t, e.store, "r2"); len(got) != 0 {
		t.Errorf("the refused call left model_calls rows %+v", got)
	}
	// A run outside the scope is not held to the budget.
	run = e.start(e.driver(m, prices, req), "r3", "tenant=other")
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if rs := e.reservations(agentrt.ReservationFilter{RunID: "r3"}); len(rs) != 0 {
		t.Errorf("a run outside the scope reserved %+v", rs)
	}
}

// An hour budget holds one call. A second call in the same hour is refused;
// when the injected clock reaches the next hour the window rolls over and a
// call is admitted again, while the first hour's window keeps what it
// settled.
func TestBudget_WindowRollsOver(t *testing.T) {
	e := newBgEnv(t)
	req := mcReq(40)
	bound := bgBound(req)
	b := e.budget(agentrt.NewBudget{Name: "hourly", Window: agentrt.WindowHour, MaxTokens: bound.Tokens + bound.Tokens/2})
	used := agentrt.Usage{InputTokens: bound.Tokens - req.MaxOutputTokens, OutputTokens: req.MaxOutputTokens}
	m := &mcModel{name: "m", GenerateFunc: mcReply(used)}
	d := e.driver(m, nil, req) // a token ceiling needs no price
	kit.RequireEnded(t, e.start(d, "h1", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	e.clock.Advance(20 * time.Minute) // 12:50, same hour
	kit.RequireEnded(t, e.start(d, "h2", ""), agentrt.RunFailed, agentrt.ReasonLimitBudget)
	e.clock.Advance(10 * time.Minute) // 13:00, the next hour
	kit.RequireEnded(t, e.start(d, "h3", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if got := len(m.requests()); got != 2 {
		t.Fatalf("the model received %d requests, want 2", got)
	}
	ws := e.windows(b)
	first, second := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	want := agentrt.Amount{Tokens: bound.Tokens}
	if len(ws) != 2 || !ws[0].WindowStart.Equal(second) || !ws[1].WindowStart.Equal(first) || ws[0].Settled != want || ws[1].Settled != want {
		t.Fatalf("windows %+v, want 13:00 and 12:00 each settling %+v", ws, want)
	}
	for _, r := range e.reservations(agentrt.ReservationFilter{BudgetID: b.ID}) {
		if r.PriceVersion != "" {
			t.Errorf("reservation %s names price version %q with no price table", r.CallID, r.PriceVersion)
		}
	}
	if ws := agentrt.WindowMonth.Start(time.Date(2026, 3, 31, 23, 59, 0, 0, time.UTC)); !ws.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month window starts %s", ws)
	}
	if ws := agentrt.WindowDay.Start(time.Date(2026, 3, 31, 23, 59, 0, 0, time.FixedZone("x", -3600))); !ws.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day window of 23:59 at UTC-1 starts %s, want the UTC day", ws)
	}
}

// A price table is stored once as an immutable version named by the hash
// of its canonical JSON. Changing the prices makes a second version; the
// first's stored row is unchanged, and every reservation and settlement
// names the version it was priced at and is priced at exactly that
// version's rates. A cost-bounded budget refuses a model the current
// version does not price.
func TestPrices_VersionIsImmutableAndNamedByEverySettlement(t *testing.T) {
	e := newBgEnv(t)
	req := mcReq(30)
	b := e.budget(agentrt.NewBudget{Name: "all", Window: agentrt.WindowMonth, MaxCost: 1_000_000_000})
	used := agentrt.Usage{InputTokens: 10, OutputTokens: 20}
	m := &mcModel{name: "m", GenerateFunc: mcReply(used)}
	p1 := agentrt.PriceTable{"m": {InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}}
	p2 := agentrt.PriceTable{"m": {InputPerMTok: 3_000_000, OutputPerMTok: 5_000_000}}
	v1, err := agentrt.NewPriceVersion(p1)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := agentrt.NewPriceVersion(p2)
	if v1.ID == v2.ID || !strings.HasPrefix(v1.ID, "sha256:") {
		t.Fatalf("versions %s and %s", v1.ID, v2.ID)
	}
	again, _ := agentrt.NewPriceVersion(agentrt.PriceTable{"m": {OutputPerMTok: 2_000_000, InputPerMTok: 1_000_000}})
	if again.ID != v1.ID {
		t.Fatalf("the same table hashed to %s and %s", v1.ID, again.ID)
	}
	kit.RequireEnded(t, e.start(e.driver(m, p1, req), "p1", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	row := func(id string) string {
		return column(t, e.store, "SELECT table_json FROM price_versions WHERE id = ?", id)
	}
	before := row(v1.ID)
	kit.RequireEnded(t, e.start(e.driver(m, p1, req), "p1b", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	kit.RequireEnded(t, e.start(e.driver(m, p2, req), "p2", ""), agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	if after := row(v1.ID); after != before || before != string(v1.Canonical) {
		t.Fatalf("version %s was rewritten: %s then %s", v1.ID, before, after)
	}
	vs, err := e.store.ListPriceVersions(context.Background())
	if err != nil || len(vs) != 2 || vs[0].ID != v1.ID || vs[1].ID != v2.ID || vs[0].DecodeError != "" || vs[1].DecodeError != "" {
		t.Fatalf("price versions %+v, %v; want %s then %s, each hashing to its id", vs, err, v1.ID, v2.ID)
	}
	if n := countRows(t, e.store, "SELECT seq FROM events WHERE type = 'price.version_added'"); n != 2 {
		t.Errorf("%d price.version_added events, want 2", n)
	}
	for run, v := range map[string]agentrt.PriceVersion{"p1": v1, "p1b": v1, "p2": v2} {
		rs := e.reservations(agentrt.ReservationFilter{RunID: run})
		want := v.Table["m"].Cost(used)
		if len(rs) != 1 || rs[0].PriceVersion != v.ID || rs[0].Actual.Cost != want || rs[0].Status != agentrt.ReservationSettled {
			t.Errorf("run %s: reservations %+v, want one settled at %d micros under %s", run, rs, want, v.ID)
		}
		for _, typ := range []agentrt.EventType{agentrt.EventModelDispatched, agentrt.EventModelCompleted} {
			evs := kit.EventsOf(t, e.store, run, typ)
			if len(evs) != 1 || kit.Payload(t, evs[0])["price_version"] != v.ID {
				t.Errorf("run %s: %s does not name %s: %v", run, typ, v.ID, evs)
			}
		}
	}
	// The stored row cannot be swapped for other prices under its id.
	_, err = e.store.Update(context.Background(), func(tx agentrt.Tx) error {
		forged := v1
		forged.Canonical = v2.Canonical
		_, err := tx.PriceVersionPut(forged)
		return err
	})
	if !errors.Is(err, agentrt.ErrTamperedRecord) {
		t.Errorf("storing other prices under %s: %v, want ErrTamperedRecord", v1.ID, err)
	}
	// A model the current version does not price is refused under a cost
	// ceiling, before it is sent.
	n := len(m.requests())
	run := e.start(e.driver(m, agentrt.PriceTable{"other": {InputPerMTok: 1}}, req), "unpriced", "")
	kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitBudget)
	if !strings.Contains(run.ReasonDetail, "no price") || len(m.requests()) != n {
		t.Errorf("unpriced model: %s, %d requests sent", run.ReasonDetail, len(m.requests())-n)
	}
	_ = b
}
