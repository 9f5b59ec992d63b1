package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

const (
	budgetCols   = "id, name, scope, period, max_cost_micros, max_tokens, version, created_at, created_by, updated_at, updated_by, retired_at, retired_by"
	selectBudget = "SELECT " + budgetCols + " FROM budgets"

	windowCols = "budget_id, window_start, reserved_cost_micros, reserved_tokens, settled_cost_micros, settled_tokens, uncertain_cost_micros, uncertain_tokens"

	reservationCols = "call_id, budget_id, window_start, run_id, step_id, attempt, generation, provider, model, max_output_tokens, price_version, " +
		"reserved_cost_micros, reserved_tokens, status, actual_cost_micros, actual_tokens, expires_at, created_at, settled_at, settled_by"
	selectReservation = "SELECT " + reservationCols + " FROM budget_reservations"
)

func scanBudget(s scanner) (agentrt.Budget, error) {
	var b agentrt.Budget
	var period, created, updated, retired string
	var cost int64
	if err := s.Scan(&b.ID, &b.Name, &b.Scope, &period, &cost, &b.MaxTokens, &b.Version, &created, &b.CreatedBy,
		&updated, &b.UpdatedBy, &retired, &b.RetiredBy); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return b, fmt.Errorf("%w: budget", agentrt.ErrNotFound)
		}
		return b, err
	}
	b.Window, b.MaxCost = agentrt.BudgetWindow(period), agentrt.Micros(cost)
	var err error
	if b.CreatedAt, err = parseTime(created); err == nil {
		if b.UpdatedAt, err = parseTime(updated); err == nil {
			b.RetiredAt, err = parseTime(retired)
		}
	}
	if err == nil && !b.Window.Valid() {
		err = fmt.Errorf("window %q is not one agentrt writes", period)
	}
	if err != nil {
		return b, fmt.Errorf("budget %s will not decode: %w", b.ID, err)
	}
	return b, nil
}

func scanBudgets(rows *sql.Rows, err error) ([]agentrt.Budget, error) {
	return scanRows(rows, err, scanBudget)
}

func scanReservation(s scanner) (agentrt.BudgetReservation, error) {
	var r agentrt.BudgetReservation
	var window, status, expires, created, settled string
	var rc, ac int64
	if err := s.Scan(&r.CallID, &r.BudgetID, &window, &r.RunID, &r.StepID, &r.Attempt, &r.Generation, &r.Provider, &r.Model,
		&r.MaxOutputTokens, &r.PriceVersion, &rc, &r.Reserved.Tokens, &status, &ac, &r.Actual.Tokens, &expires, &created,
		&settled, &r.SettledBy); err != nil {
		return r, err
	}
	r.Reserved.Cost, r.Actual.Cost, r.Status = agentrt.Micros(rc), agentrt.Micros(ac), agentrt.ReservationStatus(status)
	var bad []string
	for _, f := range []struct {
		name, text string
		to         *time.Time
	}{{"window_start", window, &r.WindowStart}, {"expires_at", expires, &r.ExpiresAt},
		{"created_at", created, &r.CreatedAt}, {"settled_at", settled, &r.SettledAt}} {
		t, err := parseTime(f.text)
		if err != nil {
			bad = append(bad, f.name+": "+err.Error())
			continue
		}
		*f.to = t
	}
	switch r.Status {
	case agentrt.ReservationReserved, agentrt.ReservationSettled, agentrt.ReservationUncertain:
	default:
		bad = append(bad, fmt.Sprintf("status %q is not one agentrt writes", status))
	}
	r.DecodeError = strings.Join(bad, "; ")
	return r, nil
}

func scanReservations(rows *sql.Rows, err error) ([]agentrt.BudgetReservation, error) {
	return scanRows(rows, err, scanReservation)
}

// BudgetInsert stores a new budget; a name an unretired budget holds is
// refused.
func (t *tx) BudgetInsert(b agentrt.Budget) error {
	_, err := t.exec(`INSERT INTO budgets (`+budgetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.Name, b.Scope, string(b.Window), int64(b.MaxCost), b.MaxTokens, b.Version, t.timeText(b.CreatedAt), b.CreatedBy,
		t.timeText(b.UpdatedAt), b.UpdatedBy, t.timeText(b.RetiredAt), b.RetiredBy)
	if err != nil && isConstraint(err) {
		return &agentrt.BudgetError{Budget: b.Name, Detail: "an unretired budget already has this name"}
	}
	return err
}

// BudgetUpdate is a compare-and-set on an unretired budget's version.
func (t *tx) BudgetUpdate(p agentrt.BudgetUpdate) error {
	q := `UPDATE budgets SET max_cost_micros = ?, max_tokens = ?, version = version + 1, updated_at = ?, updated_by = ?`
	args := []any{int64(p.MaxCost), p.MaxTokens, t.timeText(p.At), p.By}
	if p.Retire {
		q += `, retired_at = ?, retired_by = ?`
		args = append(args, t.timeText(p.At), p.By)
	}
	q += ` WHERE id = ? AND version = ? AND retired_at = ''`
	res, err := t.exec(q, append(args, p.ID, p.Version)...)
	if err != nil {
		return err
	}
	return oneRow(res, "budget", p.ID)
}

// BudgetGet reads a budget by id, retired or not.
func (t *tx) BudgetGet(id string) (agentrt.Budget, error) {
	b, err := scanBudget(t.queryRow(selectBudget+" WHERE id = ?", id))
	return notFoundAs(b, err, "budget %s", id)
}

// BudgetByName reads the unretired budget with the name.
func (t *tx) BudgetByName(name string) (agentrt.Budget, error) {
	b, err := scanBudget(t.queryRow(selectBudget+" WHERE name = ? AND retired_at = ''", name))
	return notFoundAs(b, err, "no unretired budget is named %q", name)
}

// BudgetListActive reads the unretired budgets, by id: the order a
// reservation locks their windows in, so two calls under the same budgets
// cannot deadlock.
// Only the fields a reservation needs are read.
func (t *tx) BudgetListActive() ([]agentrt.Budget, error) {
	rows, err := t.query("SELECT id, name, scope, period, max_cost_micros, max_tokens, version FROM budgets WHERE retired_at = '' ORDER BY id")
	return scanRows(rows, err, func(s scanner) (agentrt.Budget, error) {
		var b agentrt.Budget
		var period string
		var cost int64
		if err := s.Scan(&b.ID, &b.Name, &b.Scope, &period, &cost, &b.MaxTokens, &b.Version); err != nil {
			return b, err
		}
		b.Window, b.MaxCost = agentrt.BudgetWindow(period), agentrt.Micros(cost)
		if !b.Window.Valid() {
			return b, fmt.Errorf("budget %s will not decode: window %q is not one agentrt writes", b.ID, period)
		}
		return b, nil
	})
}

// BudgetReserve adds r's amount to its budget's window if the window's
// reserved, settled and uncertain amounts plus r stay within b's ceilings,
// in one conditional statement, and records r. A window without room is
// *agentrt.BudgetError and writes nothing.
func (t *tx) BudgetReserve(r agentrt.BudgetReservation, b agentrt.Budget) error {
	ws := t.timeText(r.WindowStart)
	q := `UPDATE budget_windows SET reserved_cost_micros = reserved_cost_micros + ?, reserved_tokens = reserved_tokens + ?
		WHERE budget_id = ? AND window_start = ?`
	args := []any{int64(r.Reserved.Cost), r.Reserved.Tokens, r.BudgetID, ws}
	if b.MaxCost > 0 {
		q += ` AND reserved_cost_micros + settled_cost_micros + uncertain_cost_micros + ? <= ?`
		args = append(args, int64(r.Reserved.Cost), int64(b.MaxCost))
	}
	if b.MaxTokens > 0 {
		q += ` AND reserved_tokens + settled_tokens + uncertain_tokens + ? <= ?`
		args = append(args, r.Reserved.Tokens, b.MaxTokens)
	}
	n, err := t.affected(q, args...)
	if err != nil {
		return err
	}
	var u agentrt.BudgetUsage
	if n != 1 {
		// No room, or the window's first reservation: its row is made
		// here, and the conditional update tried once more.
		u, err = t.window(r.BudgetID, ws)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := t.exec(`INSERT INTO budget_windows (budget_id, window_start) VALUES (?, ?) ON CONFLICT DO NOTHING`, r.BudgetID, ws); err != nil {
				return err
			}
			if n, err = t.affected(q, args...); err != nil {
				return err
			}
			u = agentrt.BudgetUsage{}
		} else if err != nil {
			return err
		}
	}
	if n != 1 {
		h := u.Held()
		return &agentrt.BudgetError{Budget: b.Name, Detail: fmt.Sprintf(
			"the window holds %d micros and %d tokens (reserved, settled and uncertain); this call's upper bound of %d micros and %d tokens would pass the ceilings of %d micros and %d tokens (0 is none)",
			h.Cost, h.Tokens, r.Reserved.Cost, r.Reserved.Tokens, b.MaxCost, b.MaxTokens)}
	}
	_, err = t.exec(`INSERT INTO budget_reservations (`+reservationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.CallID, r.BudgetID, ws, r.RunID, r.StepID, r.Attempt, r.Generation, r.Provider, r.Model, r.MaxOutputTokens, r.PriceVersion,
		int64(r.Reserved.Cost), r.Reserved.Tokens, string(agentrt.ReservationReserved), 0, 0, t.timeText(r.ExpiresAt), t.timeText(r.CreatedAt), "", "")
	return err
}

func (t *tx) affected(q string, args ...any) (int64, error) {
	res, err := t.exec(q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *tx) window(budgetID, ws string) (agentrt.BudgetUsage, error) {
	return scanWindow(t.queryRow("SELECT "+windowCols+" FROM budget_windows WHERE budget_id = ? AND window_start = ?", budgetID, ws))
}

func scanWindow(s scanner) (agentrt.BudgetUsage, error) {
	var u agentrt.BudgetUsage
	var ws string
	var rc, sc, uc int64
	if err := s.Scan(&u.BudgetID, &ws, &rc, &u.Reserved.Tokens, &sc, &u.Settled.Tokens, &uc, &u.Uncertain.Tokens); err != nil {
		return u, err
	}
	u.Reserved.Cost, u.Settled.Cost, u.Uncertain.Cost = agentrt.Micros(rc), agentrt.Micros(sc), agentrt.Micros(uc)
	var err error
	if u.WindowStart, err = parseTime(ws); err != nil {
		return u, fmt.Errorf("budget %s window %q will not decode: %w", u.BudgetID, ws, err)
	}
	return u, nil
}

// BudgetSettle moves one reservation on by compare-and-set on its status
// and moves its amounts between its window's columns in the same
// transaction.
func (t *tx) BudgetSettle(p agentrt.BudgetSettlement) error {
	if p.From == agentrt.ReservationSettled || p.Status == agentrt.ReservationReserved || p.Status == p.From {
		return fmt.Errorf("agentrt: a reservation does not move from %s to %s", p.From, p.Status)
	}
	actual := p.Actual
	if p.Status == agentrt.ReservationUncertain {
		actual = agentrt.Amount{}
	}
	res, err := t.exec(`UPDATE budget_reservations SET status = ?, actual_cost_micros = ?, actual_tokens = ?, settled_at = ?, settled_by = ?
		WHERE call_id = ? AND budget_id = ? AND status = ?`,
		string(p.Status), int64(actual.Cost), actual.Tokens, t.timeText(p.At), p.By, p.CallID, p.BudgetID, string(p.From))
	if err != nil {
		return err
	}
	if err := oneRow(res, "reservation of call", p.CallID); err != nil {
		return err
	}
	from, to, add := "reserved", "settled", actual
	if p.From == agentrt.ReservationUncertain {
		from = "uncertain"
	}
	if p.Status == agentrt.ReservationUncertain {
		to, add = "uncertain", p.Reserved
	}
	res, err = t.exec(`UPDATE budget_windows SET `+from+`_cost_micros = `+from+`_cost_micros - ?, `+from+`_tokens = `+from+`_tokens - ?, `+
		to+`_cost_micros = `+to+`_cost_micros + ?, `+to+`_tokens = `+to+`_tokens + ? WHERE budget_id = ? AND window_start = ?`,
		int64(p.Reserved.Cost), p.Reserved.Tokens, int64(add.Cost), add.Tokens, p.BudgetID, t.timeText(p.WindowStart))
	if err != nil {
		return err
	}
	return oneRow(res, "budget window", p.BudgetID)
}

// ReservationList reads a call's reservations.
func (t *tx) ReservationList(callID string) ([]agentrt.BudgetReservation, error) {
	return scanReservations(t.query(selectReservation+" WHERE call_id = ? ORDER BY budget_id", callID))
}

// PriceVersionPut stores a price version if absent and reports whether it
// did. A stored version under the same id with other content is refused:
// versions are immutable.
func (t *tx) PriceVersionPut(v agentrt.PriceVersion) (bool, error) {
	res, err := t.exec(`INSERT INTO price_versions (id, table_json, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		v.ID, string(v.Canonical), t.timeText(v.CreatedAt))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if n == 1 {
		return true, nil
	}
	var stored string
	if err := t.queryRow(`SELECT table_json FROM price_versions WHERE id = ?`, v.ID).Scan(&stored); err != nil {
		return false, err
	}
	if stored != string(v.Canonical) {
		return false, fmt.Errorf("%w: price version %s is stored with other content", agentrt.ErrTamperedRecord, v.ID)
	}
	return false, nil
}

// ListBudgets reads every budget in the order added.
func (s *Store) ListBudgets(ctx context.Context) ([]agentrt.Budget, error) {
	return scanBudgets(s.rdb.QueryContext(ctx, selectBudget+" ORDER BY rowid"))
}

// ListBudgetUsage reads a budget's windows, newest first.
func (s *Store) ListBudgetUsage(ctx context.Context, budgetID string, limit int) ([]agentrt.BudgetUsage, error) {
	rows, err := s.rdb.QueryContext(ctx, s.d.Rebind("SELECT "+windowCols+" FROM budget_windows WHERE budget_id = ? ORDER BY window_start DESC LIMIT ?"),
		budgetID, pageLimit(limit))
	return scanRows(rows, err, scanWindow)
}

// ListReservations reads reservations in the order made.
func (s *Store) ListReservations(ctx context.Context, f agentrt.ReservationFilter, limit int) ([]agentrt.BudgetReservation, error) {
	q := selectReservation + " WHERE 1 = 1"
	var args []any
	for _, c := range []struct{ col, v string }{{"run_id", f.RunID}, {"budget_id", f.BudgetID}, {"call_id", f.CallID}} {
		if c.v != "" {
			q += " AND " + c.col + " = ?"
			args = append(args, c.v)
		}
	}
	if f.Open {
		q += " AND status <> 'settled'"
	}
	q += " ORDER BY rowid LIMIT ?"
	return scanReservations(s.rdb.QueryContext(ctx, s.d.Rebind(q), append(args, pageLimit(limit))...))
}

// ListPriceVersions reads every price version in the order stored.
func (s *Store) ListPriceVersions(ctx context.Context) ([]agentrt.PriceVersion, error) {
	rows, err := s.rdb.QueryContext(ctx, "SELECT id, table_json, created_at FROM price_versions ORDER BY rowid")
	return scanRows(rows, err, scanPriceVersion)
}

// scanPriceVersion reads a price version; a table that will not parse or
// does not hash to its id is kept, with a DecodeError saying so.
func scanPriceVersion(s scanner) (agentrt.PriceVersion, error) {
	var id, table, created string
	if err := s.Scan(&id, &table, &created); err != nil {
		return agentrt.PriceVersion{}, err
	}
	v, err := agentrt.ParsePriceVersion([]byte(table))
	pv := agentrt.PriceVersion{ID: id, Table: v.Table, Canonical: []byte(table)}
	pv.CreatedAt, _ = parseTime(created)
	switch {
	case err != nil:
		pv.DecodeError = err.Error()
	case v.ID != id:
		pv.DecodeError = fmt.Sprintf("the table hashes to %s, not its id", v.ID)
	}
	return pv, nil
}

// pageLimit bounds a read's limit: at most 10,000 rows, and 100 when
// limit is not positive.
func pageLimit(limit int) int {
	if limit <= 0 {
		return 100
	}
	return min(limit, 10_000)
}
