package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// BudgetRace is the scenario of TestBudget_ConcurrentRunsNeverReserveBeyondTheCeiling
// on one backend: Runs runs share one budget sized for about a third of
// their calls, driven concurrently by one engine per store in Engines (the
// same database opened once per engine: a worker process each, or one
// store shared by goroutines).
type BudgetRace struct {
	// Store is where the budget is added and the record checked.
	Store agentrt.Store
	// Engines are the stores the runs' engines write through; runs are
	// spread over them round-robin.
	Engines []agentrt.Store
	Runs    int
	// Workers enqueues the runs for a Worker per engine to claim;
	// otherwise each run is started by a goroutine of its own.
	Workers bool
}

// budgetRaceCalls is how many model calls each run tries to make.
const budgetRaceCalls = 3

// raceModel answers every request with exactly the upper bound the caller
// reserves, so each admitted call settles what it reserved, and counts the
// requests that reached it.
type raceModel struct {
	n         atomic.Int64
	onRequest func()
}

func (m *raceModel) Name() string     { return "race-model" }
func (m *raceModel) Provider() string { return "scripted" }
func (m *raceModel) Generate(_ context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	m.n.Add(1)
	if m.onRequest != nil {
		m.onRequest()
	}
	return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn,
		Usage: agentrt.Usage{InputTokens: agentrt.EstimateInputTokens(req), OutputTokens: req.MaxOutputTokens}}, nil
}

var raceRequest = agentrt.ModelRequest{System: "Be brief.", MaxOutputTokens: 100,
	Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "Count to three."}}}}}

var racePrice = agentrt.Price{InputPerMTok: 1_000_000, OutputPerMTok: 4_000_000}

// Run runs the scenario in this process and checks it (CheckBudgetRace).
func (c BudgetRace) Run(t *testing.T) {
	ctx := context.Background()
	b := AddRaceBudget(t, c.Store, c.Runs)
	model := &raceModel{}
	ids := RaceRunIDs(c.Runs)
	if c.Workers {
		c.runWorkers(t, model, ids)
	} else {
		var wg sync.WaitGroup
		for i, id := range ids {
			cfg, agent := raceEngine(c.Engines[i%len(c.Engines)], fmt.Sprintf("engine-%d", i%len(c.Engines)), model)
			d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: cfg, Agent: agent})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := d.StartWithID(ctx, id, "race", RaceLimits()); err != nil {
					t.Errorf("run %s: %v", id, err)
				}
			}()
		}
		wg.Wait()
	}
	CheckBudgetRace(t, c.Store, b, ids, model.n.Load())
}

// AddRaceBudget adds the race's budget, sized for a third of the calls
// of runs runs.
func AddRaceBudget(t *testing.T, st agentrt.Store, runs int) agentrt.Budget {
	perCall := racePerCall()
	ceiling := perCall*agentrt.Micros(runs*budgetRaceCalls/3) + perCall/2
	b, err := agentrt.Operator{Store: st}.AddBudget(context.Background(), agentrt.NewBudget{Name: "team", Scope: "tenant=acme", Window: agentrt.WindowDay, MaxCost: ceiling, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func racePerCall() agentrt.Micros {
	return racePrice.Cost(agentrt.Usage{InputTokens: agentrt.EstimateInputTokens(raceRequest), OutputTokens: raceRequest.MaxOutputTokens})
}

// RaceRunIDs are the ids of the race's runs.
func RaceRunIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("race-%02d", i)
	}
	return ids
}

// RaceLimits are the race runs' limits: labelled tenant=acme.
func RaceLimits() agentrt.Limits {
	l := agentrt.DefaultLimits()
	l.Labels = "tenant=acme"
	return l
}

// RaceEngine is the engine configuration and agent a race worker runs on
// st; onRequest is called for each request that reaches the model.
func RaceEngine(st agentrt.Store, owner string, onRequest func()) (agentrt.EngineConfig, agentrt.Agent) {
	return raceEngine(st, owner, &raceModel{onRequest: onRequest})
}

func raceEngine(st agentrt.Store, owner string, model *raceModel) (agentrt.EngineConfig, agentrt.Agent) {
	agent := agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		for range budgetRaceCalls {
			if _, err := in.Model.Generate(ctx, raceRequest); err != nil {
				return agentrt.Decision{}, err
			}
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	return agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), LeaseOwner: owner,
		Model: &agentrt.ModelConfig{Model: model}, Prices: agentrt.PriceTable{"race-model": racePrice}}, agent
}

// CheckBudgetRace checks a finished race: exactly as many calls were
// admitted as the ceiling holds, every other run ended limit_budget with
// no request sent for the refused call (requests is how many reached the
// model), the held amount never passed the ceiling at any event of the
// chain (reservations add, settlements move), the stored window agrees
// with the chain, and the chain verifies.
func CheckBudgetRace(t *testing.T, st agentrt.Store, b agentrt.Budget, ids []string, requests int64) {
	ctx := context.Background()
	ceiling := b.MaxCost
	admit := len(ids) * budgetRaceCalls / 3
	perCall := racePerCall()
	// Every run ended: completed, or refused by the budget.
	refusedRuns := 0
	for _, id := range ids {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Status == agentrt.RunCompleted:
		case r.Status == agentrt.RunFailed && r.Reason == agentrt.ReasonLimitBudget:
			refusedRuns++
		default:
			t.Errorf("run %s ended %s/%s (%s), want completed or limit_budget", id, r.Status, r.Reason, r.ReasonDetail)
		}
	}
	if refusedRuns == 0 {
		t.Errorf("no run was refused; the budget admitted every call")
	}
	// Replay the chain in commit order.
	var held, settledSum agentrt.Micros
	dispatched, settledN := 0, 0
	var after int64
	for {
		evs, err := st.ListEventsAfter(ctx, "", after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			after = e.Seq
			switch e.Type {
			case agentrt.EventModelDispatched:
				var p struct {
					Reservations []struct {
						BudgetID string         `json:"budget_id"`
						Reserved agentrt.Amount `json:"reserved"`
					} `json:"reservations"`
					PriceVersion string `json:"price_version"`
				}
				if err := json.Unmarshal(e.Payload, &p); err != nil {
					t.Fatal(err)
				}
				if len(p.Reservations) != 1 || p.Reservations[0].BudgetID != b.ID || p.PriceVersion == "" {
					t.Fatalf("event %d: model.dispatched reserves %+v at %q, want one reservation on %s at a price version", e.Seq, p.Reservations, p.PriceVersion, b.ID)
				}
				dispatched++
				held += p.Reservations[0].Reserved.Cost
			case agentrt.EventModelCompleted, agentrt.EventModelFailed:
				var p struct {
					Settlements []struct {
						Status   agentrt.ReservationStatus `json:"status"`
						Reserved agentrt.Amount            `json:"reserved"`
						Actual   agentrt.Amount            `json:"actual"`
					} `json:"settlements"`
				}
				if err := json.Unmarshal(e.Payload, &p); err != nil {
					t.Fatal(err)
				}
				for _, s := range p.Settlements {
					if s.Status != agentrt.ReservationSettled {
						t.Errorf("event %d: settlement %s, want settled", e.Seq, s.Status)
					}
					held += s.Actual.Cost - s.Reserved.Cost
					settledSum += s.Actual.Cost
					settledN++
				}
			}
			if held > ceiling {
				t.Fatalf("after event %d (%s) the budget holds %d micros, over its ceiling of %d", e.Seq, e.Type, held, ceiling)
			}
		}
	}
	if dispatched != admit || settledN != admit {
		t.Errorf("%d calls reserved and %d settled, want exactly the %d the ceiling of %d holds at %d each", dispatched, settledN, admit, ceiling, perCall)
	}
	if got := requests; got != int64(dispatched) {
		t.Errorf("the model received %d requests for %d dispatched calls: a refused call was sent", got, dispatched)
	}
	br := st.(agentrt.BudgetReader)
	ws, err := br.ListBudgetUsage(ctx, b.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].Reserved != (agentrt.Amount{}) || ws[0].Settled.Cost != settledSum || ws[0].Uncertain != (agentrt.Amount{}) || ws[0].Held().Cost > ceiling {
		t.Errorf("stored windows %+v, want one with %d settled and nothing reserved or uncertain", ws, settledSum)
	}
	rs, err := br.ListReservations(ctx, agentrt.ReservationFilter{BudgetID: b.ID}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != admit {
		t.Errorf("%d reservation rows, want %d", len(rs), admit)
	}
	rep, err := st.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("the chain does not verify: %+v, %v", rep.Break, err)
	}
}

func (c BudgetRace) runWorkers(t *testing.T, model *raceModel, ids []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, agent := raceEngine(c.Store, "enqueuer", model)
	enq, err := agentrt.NewDriver(agentrt.Config{EngineConfig: cfg, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := enq.EnqueueWithID(ctx, id, "race", RaceLimits()); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i, st := range c.Engines {
		wc := agentrt.DefaultWorkerConfig()
		wc.EngineConfig, wc.Agent = raceEngine(st, fmt.Sprintf("worker-%d", i), model)
		wc.Concurrency = max(len(ids)/len(c.Engines), 1)
		wc.Poll = 20 * time.Millisecond
		w, err := agentrt.NewWorker(wc)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("worker: %v", err)
			}
		}()
	}
	AwaitEnded(t, c.Store, ids, 2*time.Minute)
	cancel()
	wg.Wait()
}

// AwaitEnded waits until every run of ids is terminal, or fails after
// within.
func AwaitEnded(t *testing.T, st agentrt.Store, ids []string, within time.Duration) {
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		done := 0
		for _, id := range ids {
			r, err := st.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Terminal() {
				done++
			}
		}
		if done == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended within %s", done, len(ids), within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// budgets checks the budget seam: names unique among unretired budgets, a
// compare-and-set on the version, reservations refused at the ceiling
// with nothing written, settlement past the reservation, uncertain
// holding all of it, a status compare-and-set, and immutable price
// versions.
func budgets(t *testing.T, s agentrt.Store) {
	ctx := context.Background()
	insertRun(t, s, "r")
	b := agentrt.Budget{ID: "b1", Name: "team", Window: agentrt.WindowDay, MaxCost: 100, MaxTokens: 0, Version: 1,
		CreatedAt: t0, CreatedBy: "a", UpdatedAt: t0, UpdatedBy: "a"}
	_, err := update(t, s, func(tx agentrt.Tx) error { return tx.BudgetInsert(b) })
	must(t, err)
	dup := b
	dup.ID = "b2"
	if _, err := update(t, s, func(tx agentrt.Tx) error { return tx.BudgetInsert(dup) }); !errors.Is(err, agentrt.ErrBudget) {
		t.Fatalf("a second unretired budget named team: %v, want ErrBudget", err)
	}
	if _, err := update(t, s, func(tx agentrt.Tx) error {
		return tx.BudgetUpdate(agentrt.BudgetUpdate{ID: "b1", Version: 7, MaxCost: 1, At: t0, By: "x"})
	}); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("update at a stale version: %v, want ErrRunState", err)
	}
	ws := agentrt.WindowDay.Start(t0)
	res := func(call string, cost agentrt.Micros) agentrt.BudgetReservation {
		return agentrt.BudgetReservation{CallID: call, BudgetID: "b1", WindowStart: ws, RunID: "r", StepID: "s", Attempt: 1, Generation: 1,
			Provider: "p", Model: "m", MaxOutputTokens: 10, PriceVersion: "sha256:x", Reserved: agentrt.Amount{Cost: cost, Tokens: 5},
			Status: agentrt.ReservationReserved, ExpiresAt: t0.Add(time.Minute), CreatedAt: t0}
	}
	var bs []agentrt.Budget
	_, err = update(t, s, func(tx agentrt.Tx) error {
		var err error
		bs, err = tx.BudgetListActive()
		if err != nil {
			return err
		}
		if err := tx.BudgetReserve(res("c1", 60), b); err != nil {
			return err
		}
		return tx.BudgetReserve(res("c2", 40), b)
	})
	must(t, err)
	if len(bs) != 1 || bs[0].Name != "team" || bs[0].Window != agentrt.WindowDay || bs[0].MaxCost != 100 || bs[0].Version != 1 {
		t.Fatalf("active budgets %+v", bs)
	}
	if _, err := update(t, s, func(tx agentrt.Tx) error { return tx.BudgetReserve(res("c3", 1), b) }); !errors.Is(err, agentrt.ErrBudget) {
		t.Fatalf("a reservation past the ceiling: %v, want ErrBudget", err)
	}
	br := s.(agentrt.BudgetReader)
	window := func() agentrt.BudgetUsage {
		t.Helper()
		u, err := br.ListBudgetUsage(ctx, "b1", 10)
		must(t, err)
		if len(u) != 1 || !u[0].WindowStart.Equal(ws) {
			t.Fatalf("windows %+v", u)
		}
		return u[0]
	}
	if u := window(); u.Reserved != (agentrt.Amount{Cost: 100, Tokens: 10}) {
		t.Fatalf("after two reservations and a refusal: %+v", u)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		if err := tx.BudgetSettle(agentrt.BudgetSettlement{CallID: "c1", BudgetID: "b1", WindowStart: ws, Reserved: agentrt.Amount{Cost: 60, Tokens: 5}, From: agentrt.ReservationReserved,
			Status: agentrt.ReservationSettled, Actual: agentrt.Amount{Cost: 90, Tokens: 9}, At: t0, By: "w"}); err != nil {
			return err
		}
		return tx.BudgetSettle(agentrt.BudgetSettlement{CallID: "c2", BudgetID: "b1", WindowStart: ws, Reserved: agentrt.Amount{Cost: 40, Tokens: 5}, From: agentrt.ReservationReserved,
			Status: agentrt.ReservationUncertain, At: t0, By: "w"})
	})
	must(t, err)
	if u := window(); u.Reserved != (agentrt.Amount{}) || u.Settled != (agentrt.Amount{Cost: 90, Tokens: 9}) || u.Uncertain != (agentrt.Amount{Cost: 40, Tokens: 5}) {
		t.Fatalf("after settling past the reservation and an uncertain one: %+v", u)
	}
	if _, err := update(t, s, func(tx agentrt.Tx) error {
		return tx.BudgetSettle(agentrt.BudgetSettlement{CallID: "c2", BudgetID: "b1", WindowStart: ws, Reserved: agentrt.Amount{Cost: 40, Tokens: 5}, From: agentrt.ReservationReserved,
			Status: agentrt.ReservationSettled, At: t0, By: "worker"})
	}); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a worker settling an uncertain reservation: %v, want ErrRunState", err)
	}
	rs, err := br.ListReservations(ctx, agentrt.ReservationFilter{RunID: "r", Open: true}, 10)
	must(t, err)
	if len(rs) != 1 || rs[0].CallID != "c2" || rs[0].Status != agentrt.ReservationUncertain {
		t.Fatalf("open reservations %+v, want c2 uncertain", rs)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		return tx.BudgetSettle(agentrt.BudgetSettlement{CallID: "c2", BudgetID: "b1", WindowStart: ws, Reserved: agentrt.Amount{Cost: 40, Tokens: 5}, From: agentrt.ReservationUncertain,
			Status: agentrt.ReservationSettled, Actual: agentrt.Amount{Cost: 7, Tokens: 3}, At: t0, By: "operator"})
	})
	must(t, err)
	if u := window(); u.Uncertain != (agentrt.Amount{}) || u.Settled != (agentrt.Amount{Cost: 97, Tokens: 12}) {
		t.Fatalf("after reconciling the uncertain one at 7: %+v", u)
	}
	rs, err = br.ListReservations(ctx, agentrt.ReservationFilter{RunID: "r"}, 10)
	must(t, err)
	if len(rs) != 2 || rs[0].CallID != "c1" || rs[0].Actual.Cost != 90 || rs[1].Status != agentrt.ReservationSettled || rs[1].SettledBy != "operator" || rs[0].DecodeError != "" || !rs[1].ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("reservations %+v", rs)
	}
	v, err := agentrt.NewPriceVersion(agentrt.PriceTable{"m": {InputPerMTok: 1}})
	must(t, err)
	for i, want := range []bool{true, false} {
		var added bool
		_, err := update(t, s, func(tx agentrt.Tx) error { var err error; added, err = tx.PriceVersionPut(v); return err })
		if err != nil || added != want {
			t.Fatalf("put %d: added %v, %v", i, added, err)
		}
	}
	forged := v
	forged.Canonical = []byte(`{"m":{"input_per_mtok":0,"output_per_mtok":0,"cached_input_per_mtok":0}}`)
	if _, err := update(t, s, func(tx agentrt.Tx) error { _, err := tx.PriceVersionPut(forged); return err }); !errors.Is(err, agentrt.ErrTamperedRecord) {
		t.Fatalf("other prices under a stored id: %v", err)
	}
	vs, err := br.ListPriceVersions(ctx)
	if err != nil || len(vs) != 1 || vs[0].ID != v.ID || vs[0].DecodeError != "" {
		t.Fatalf("price versions %+v, %v", vs, err)
	}
}
