package agentrt

import (
	"errors"
	"fmt"
	"time"
)

// idOrEmpty is the version's id, or "" for no version.
func (v *PriceVersion) idOrEmpty() string {
	if v == nil {
		return ""
	}
	return v.ID
}

// reserve holds the call's upper bound, the input bound plus the output
// ceiling at the current price version with all input uncached, on every
// unretired budget whose scope the run's labels cover, inside the dispatch
// transaction. A budget without room, a request with no output cap, or a
// cost-bounded budget over a model the version does not price refuses the
// call with limit_budget, and the transaction writes nothing.
func (c *modelCaller) reserve(tx Tx, run Run, call ModelCall, req ModelRequest, est Usage, provider string, now time.Time) ([]BudgetHold, string, error) {
	all, err := tx.BudgetListActive()
	if err != nil {
		return nil, "", err
	}
	var apply []Budget
	for _, b := range all {
		if b.Applies(run.Limits.Labels) {
			apply = append(apply, b)
		}
	}
	if len(apply) == 0 {
		return nil, "", nil
	}
	refuse := func(format string, args ...any) error {
		return &LimitError{Reason: ReasonLimitBudget, Detail: fmt.Sprintf(format, args...)}
	}
	if req.MaxOutputTokens <= 0 {
		return nil, "", refuse("budget %q applies, and a request with no output cap has no upper bound; set MaxOutputTokens or Limits.MaxOutputTokensPerCall", apply[0].Name)
	}
	pv := c.s.e.prices
	var price Price
	priced := false
	if pv != nil {
		price, priced = pv.Table[call.Model]
	}
	for _, b := range apply {
		if b.MaxCost > 0 && !priced {
			if pv == nil {
				return nil, "", refuse("budget %q bounds cost, and no price table is configured (Config.Prices)", b.Name)
			}
			return nil, "", refuse("budget %q bounds cost, and model %q has no price in price version %s", b.Name, call.Model, pv.ID)
		}
	}
	version := ""
	if pv != nil {
		version = pv.ID
		if !c.s.e.pricesStored.Load() {
			v := *pv
			v.CreatedAt = now
			added, err := tx.PriceVersionPut(v)
			if err != nil {
				return nil, "", err
			}
			if added {
				if err := event(tx, "", "", now, EventPriceVersionAdded, PriceVersionAddedPayload{ID: v.ID, Table: v.Table}); err != nil {
					return nil, "", err
				}
			}
		}
	}
	bound := Usage{InputTokens: est.InputTokens, OutputTokens: est.OutputTokens}
	amt := clampAmount(Amount{Cost: costOf(price, bound), Tokens: satAdd(bound.InputTokens, bound.OutputTokens)})
	timeout := c.cfg.CallTimeout
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	expires := now.Add(timeout + recordTimeout)
	holds := make([]BudgetHold, 0, len(apply))
	for _, b := range apply {
		r := BudgetReservation{CallID: call.ID, BudgetID: b.ID, WindowStart: b.Window.Start(now), RunID: run.ID, StepID: call.StepID,
			Attempt: call.Attempt, Generation: run.Generation, Provider: provider, Model: call.Model, MaxOutputTokens: req.MaxOutputTokens,
			PriceVersion: version, Reserved: amt, Status: ReservationReserved, ExpiresAt: expires, CreatedAt: now}
		if err := tx.BudgetReserve(r, b); err != nil {
			var be *BudgetError
			if errors.As(err, &be) {
				return nil, "", refuse("%s", be.Error())
			}
			return nil, "", err
		}
		holds = append(holds, BudgetHold{BudgetID: b.ID, Budget: b.Name, Window: r.WindowStart, Reserved: amt, ExpiresAt: expires})
	}
	return holds, version, nil
}

// settleHolds settles a call's holds in the transaction recording its
// outcome: at the actual usage and cost, which may exceed the reservation,
// or, when the outcome is unknown, as uncertain, holding all of it. A hold
// an operator reconciled first is left as they settled it.
func settleHolds(tx Tx, callID string, holds []BudgetHold, out attemptOutcome, charged Usage, cost Micros, at time.Time, by string) ([]SettlementNote, error) {
	if len(holds) == 0 {
		return nil, nil
	}
	actual := clampAmount(Amount{Cost: cost, Tokens: satAdd(charged.InputTokens, charged.OutputTokens)})
	status := ReservationSettled
	if out.unknown {
		status, actual = ReservationUncertain, Amount{}
	}
	notes := make([]SettlementNote, 0, len(holds))
	for _, h := range holds {
		n := SettlementNote{BudgetID: h.BudgetID, Budget: h.Budget, Status: status, Reserved: h.Reserved, Actual: actual}
		err := tx.BudgetSettle(BudgetSettlement{CallID: callID, BudgetID: h.BudgetID, WindowStart: h.Window, Reserved: h.Reserved,
			From: ReservationReserved, Status: status, Actual: actual, At: at, By: by})
		if errors.Is(err, ErrRunState) {
			n.Status, n.Actual, n.Skipped = ReservationSettled, Amount{}, true
		} else if err != nil {
			return nil, err
		}
		notes = append(notes, n)
	}
	return notes, nil
}
