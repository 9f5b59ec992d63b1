package agentrt

import (
	"context"
	"fmt"
	"time"
)

// maxBudgetAmount bounds a ceiling and any figure an operator settles with,
// so that sums of them in SQL never overflow a 64-bit integer.
const maxBudgetAmount = 1 << 53

// NewBudget is what AddBudget records.
type NewBudget struct {
	Name string
	// Scope is labels "k=v,k=v" (any order); "" applies to every run.
	Scope     string
	Window    BudgetWindow
	MaxCost   Micros
	MaxTokens int64
	// By names who adds the budget, recorded as given.
	By string
}

func checkCeilings(cost Micros, tokens int64) error {
	if cost < 0 || cost > maxBudgetAmount {
		return &ConfigError{Field: "budget max cost", Reason: fmt.Sprintf("must be 0 to %d micros, got %d", int64(maxBudgetAmount), cost)}
	}
	if tokens < 0 || tokens > maxBudgetAmount {
		return &ConfigError{Field: "budget max tokens", Reason: fmt.Sprintf("must be 0 to %d, got %d", int64(maxBudgetAmount), tokens)}
	}
	if cost == 0 && tokens == 0 {
		return &ConfigError{Field: "budget ceilings", Reason: "must bound cost, tokens or both"}
	}
	return nil
}

// AddBudget stores a new budget and its budget.changed event. Its name
// must not be held by an unretired budget.
func (o Operator) AddBudget(ctx context.Context, n NewBudget) (Budget, error) {
	if err := CheckApproverName(n.Name); err != nil {
		return Budget{}, &ConfigError{Field: "budget name", Reason: err.(*ConfigError).Reason}
	}
	scope, err := ParseLabels(n.Scope)
	if err != nil {
		return Budget{}, err
	}
	if !n.Window.Valid() {
		return Budget{}, &ConfigError{Field: "budget window", Reason: fmt.Sprintf("is %q; use hour, day, month or none", n.Window)}
	}
	if err := checkCeilings(n.MaxCost, n.MaxTokens); err != nil {
		return Budget{}, err
	}
	if n.By == "" {
		return Budget{}, &ConfigError{Field: "by", Reason: "must name who adds the budget"}
	}
	now := o.now()
	b := Budget{ID: newRandomID(), Name: n.Name, Scope: scope, Window: n.Window, MaxCost: n.MaxCost, MaxTokens: n.MaxTokens,
		Version: 1, CreatedAt: now, CreatedBy: n.By, UpdatedAt: now, UpdatedBy: n.By}
	err = o.write(ctx, func(tx Tx) error {
		if err := tx.BudgetInsert(b); err != nil {
			return err
		}
		return event(tx, "", "", now, EventBudgetChanged, BudgetChangedPayload{Action: "added", By: n.By, Budget: b})
	})
	return b, err
}

// SetBudget changes the ceilings of the unretired budget with the name. A
// lower ceiling refuses new reservations at once; what is held stays held.
func (o Operator) SetBudget(ctx context.Context, name string, maxCost Micros, maxTokens int64, by string) (Budget, error) {
	if err := checkCeilings(maxCost, maxTokens); err != nil {
		return Budget{}, err
	}
	return o.changeBudget(ctx, name, by, func(b *Budget) (BudgetUpdate, string) {
		b.MaxCost, b.MaxTokens = maxCost, maxTokens
		return BudgetUpdate{MaxCost: maxCost, MaxTokens: maxTokens}, "set"
	})
}

// RetireBudget retires the unretired budget with the name: it applies to
// no call from then on, and it is kept, with its usage, for the audit.
// Reservations it holds are still settled against it.
func (o Operator) RetireBudget(ctx context.Context, name, by string) (Budget, error) {
	return o.changeBudget(ctx, name, by, func(b *Budget) (BudgetUpdate, string) {
		return BudgetUpdate{MaxCost: b.MaxCost, MaxTokens: b.MaxTokens, Retire: true}, "retired"
	})
}

func (o Operator) changeBudget(ctx context.Context, name, by string, change func(b *Budget) (BudgetUpdate, string)) (Budget, error) {
	if by == "" {
		return Budget{}, &ConfigError{Field: "by", Reason: "must name who changes the budget"}
	}
	byName := func(tx Tx) (Budget, error) { return tx.BudgetByName(name) }
	return changeRow(ctx, o, byName, func(tx Tx, b *Budget, now time.Time) error {
		p, action := change(b)
		p.ID, p.Version, p.At, p.By = b.ID, b.Version, now, by
		if err := tx.BudgetUpdate(p); err != nil {
			return err
		}
		b.Version++
		b.UpdatedAt, b.UpdatedBy = now, by
		if p.Retire {
			b.RetiredAt, b.RetiredBy = now, by
		}
		return event(tx, "", "", now, EventBudgetChanged, BudgetChangedPayload{Action: action, By: by, Budget: *b})
	})
}

// ReconcileReservation settles a model call's uncertain reservations (or
// ones still reserved past their expiry, whose process stopped recording)
// at actual, an operator's figure or a provider's usage record: actual is
// counted as settled in each budget's window and the rest of the hold is
// released. A reservation still within its expiry is refused: its call may
// yet be recorded by the process that made it.
func (o Operator) ReconcileReservation(ctx context.Context, callID string, actual Amount, by, note string) ([]BudgetReservation, error) {
	if by == "" {
		return nil, &ConfigError{Field: "by", Reason: "must name who reconciles"}
	}
	if actual.Cost < 0 || actual.Cost > maxBudgetAmount || actual.Tokens < 0 || actual.Tokens > maxBudgetAmount {
		return nil, &ConfigError{Field: "reconciled figure", Reason: fmt.Sprintf("cost and tokens must be 0 to %d", int64(maxBudgetAmount))}
	}
	if len(note) > maxErrorText {
		return nil, &ConfigError{Field: "note", Reason: fmt.Sprintf("is %d bytes; at most %d", len(note), maxErrorText)}
	}
	now := o.now()
	var done []BudgetReservation
	err := o.write(ctx, func(tx Tx) error {
		done = done[:0]
		rs, err := tx.ReservationList(callID)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Status == ReservationSettled {
				continue
			}
			if !r.Uncertain(now) {
				return &BudgetError{Detail: fmt.Sprintf("call %s's reservation is reserved until %s and may still be recorded by its process; reconcile it after that", callID, r.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"))}
			}
			b, err := tx.BudgetGet(r.BudgetID)
			if err != nil {
				return err
			}
			if err := tx.BudgetSettle(BudgetSettlement{CallID: callID, BudgetID: r.BudgetID, WindowStart: r.WindowStart, Reserved: r.Reserved,
				From: r.Status, Status: ReservationSettled, Actual: actual, At: now, By: by}); err != nil {
				return err
			}
			if err := event(tx, r.RunID, r.StepID, now, EventBudgetReconciled, BudgetReconciledPayload{CallID: callID, BudgetID: b.ID, Budget: b.Name,
				From: r.Status, Reserved: r.Reserved, Actual: actual, By: by, Note: note}); err != nil {
				return err
			}
			r.Status, r.Actual, r.SettledAt, r.SettledBy = ReservationSettled, actual, now, by
			done = append(done, r)
		}
		if len(done) == 0 {
			return &BudgetError{Detail: fmt.Sprintf("call %s holds no unsettled reservation", callID)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// clampAmount keeps a figure written to a budget counter within
// maxBudgetAmount, so counter sums cannot overflow.
func clampAmount(a Amount) Amount {
	return Amount{Cost: Micros(min(max(int64(a.Cost), 0), maxBudgetAmount)), Tokens: min(max(a.Tokens, 0), maxBudgetAmount)}
}
