package agentrt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// ReasonLimitBudget ends a run whose model call a shared budget refused.
const ReasonLimitBudget TerminalReason = "limit_budget"

// ErrBudget is matched by every refusal of a budget operation or of a
// model call by a budget (*BudgetError).
var ErrBudget = errors.New("agentrt: budget refused")

// BudgetError says which budget refused what.
type BudgetError struct {
	Budget string
	Detail string
}

func (e *BudgetError) Error() string {
	if e.Budget == "" {
		return "agentrt: budget: " + e.Detail
	}
	return fmt.Sprintf("agentrt: budget %q: %s", e.Budget, e.Detail)
}

// Is matches ErrBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// BudgetWindow is the fixed interval a budget's ceilings apply to. Windows
// are aligned in UTC: an hour budget starts afresh on each hour, a day
// budget at midnight UTC, a month budget on the first of the month. Usage
// counts in the window its reservation was made in, however late it is
// settled.
type BudgetWindow string

const (
	// WindowHour resets on each UTC hour.
	WindowHour BudgetWindow = "hour"
	// WindowDay resets at midnight UTC.
	WindowDay BudgetWindow = "day"
	// WindowMonth resets on the first of each month, UTC.
	WindowMonth BudgetWindow = "month"
	// WindowNone never resets: a lifetime ceiling.
	WindowNone BudgetWindow = "none"
)

// Valid reports whether w is a known window.
func (w BudgetWindow) Valid() bool {
	switch w {
	case WindowHour, WindowDay, WindowMonth, WindowNone:
		return true
	}
	return false
}

// Start is the start of the window holding t; the zero time for WindowNone.
func (w BudgetWindow) Start(t time.Time) time.Time {
	t = t.UTC()
	switch w {
	case WindowHour:
		return t.Truncate(time.Hour)
	case WindowDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case WindowMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// Budget is a ceiling shared by every run whose labels include its scope,
// whichever process makes the calls. A zero ceiling leaves that dimension
// unbounded; a budget with both zero admits nothing it cannot price.
// Scope and Window are fixed when a budget is added; its ceilings change by
// compare-and-set on Version; a retired budget applies to nothing and is
// kept, with its usage, for the audit.
type Budget struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Scope is the labels a run must carry for the budget to apply, in the
	// canonical form Labels makes; "" applies to every run.
	Scope     string       `json:"scope"`
	Window    BudgetWindow `json:"window"`
	MaxCost   Micros       `json:"max_cost_micros"`
	MaxTokens int64        `json:"max_tokens"`
	Version   int64        `json:"version"`
	CreatedAt time.Time    `json:"created_at"`
	CreatedBy string       `json:"created_by"`
	UpdatedAt time.Time    `json:"updated_at"`
	UpdatedBy string       `json:"updated_by"`
	RetiredAt time.Time    `json:"retired_at,omitzero"`
	RetiredBy string       `json:"retired_by,omitempty"`
}

// Retired reports whether the budget was retired.
func (b Budget) Retired() bool { return !b.RetiredAt.IsZero() }

// Applies reports whether a run carrying labels (canonical, as
// Limits.Labels) falls under the budget: every label of the scope is one of
// the run's.
func (b Budget) Applies(labels string) bool {
	if b.Retired() {
		return false
	}
	if b.Scope == "" {
		return true
	}
	have := strings.Split(labels, ",")
	for _, want := range strings.Split(b.Scope, ",") {
		found := false
		for _, h := range have {
			if h == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Amount is a cost and a token count held against a budget.
type Amount struct {
	Cost   Micros `json:"cost_micros"`
	Tokens int64  `json:"tokens"`
}

// BudgetUsage is what one window of a budget holds: reserved by calls in
// flight, settled by calls that ended, and uncertain (calls whose outcome
// is unknown, held until an operator reconciles them). A reservation whose
// expiry passed while still reserved is counted in Reserved here and shown
// as uncertain by the operator commands: its process stopped recording.
type BudgetUsage struct {
	BudgetID    string    `json:"budget_id"`
	WindowStart time.Time `json:"window_start,omitzero"`
	Reserved    Amount    `json:"reserved"`
	Settled     Amount    `json:"settled"`
	Uncertain   Amount    `json:"uncertain"`
}

// Held is everything the window holds against its ceilings.
func (u BudgetUsage) Held() Amount {
	return Amount{
		Cost:   Micros(satAdd(satAdd(int64(u.Reserved.Cost), int64(u.Settled.Cost)), int64(u.Uncertain.Cost))),
		Tokens: satAdd(satAdd(u.Reserved.Tokens, u.Settled.Tokens), u.Uncertain.Tokens),
	}
}

// ReservationStatus is where a budget reservation is.
type ReservationStatus string

const (
	// ReservationReserved: written with the call's dispatch; the caller
	// moves it on when the call's outcome is recorded. Past its expiry it
	// is uncertain in all but name.
	ReservationReserved ReservationStatus = "reserved"
	// ReservationSettled: the call's actual usage was recorded (by the
	// caller, or by an operator's reconciliation) and the unused part
	// released. Terminal.
	ReservationSettled ReservationStatus = "settled"
	// ReservationUncertain: the call may have been served but its usage is
	// unknown; the whole reservation keeps holding capacity until
	// ReconcileReservation settles it. No worker moves it.
	ReservationUncertain ReservationStatus = "uncertain"
)

// BudgetReservation is one model call's hold on one budget.
type BudgetReservation struct {
	CallID      string    `json:"call_id"`
	BudgetID    string    `json:"budget_id"`
	WindowStart time.Time `json:"window_start,omitzero"`
	RunID       string    `json:"run_id"`
	StepID      string    `json:"step_id"`
	Attempt     int       `json:"attempt"`
	// Generation is the run's fencing generation the call was made under.
	Generation      int64             `json:"generation"`
	Provider        string            `json:"provider"`
	Model           string            `json:"model"`
	MaxOutputTokens int64             `json:"max_output_tokens"`
	PriceVersion    string            `json:"price_version"`
	Reserved        Amount            `json:"reserved"`
	Status          ReservationStatus `json:"status"`
	// Actual is what the call was settled at; it may exceed Reserved.
	Actual    Amount    `json:"actual"`
	ExpiresAt time.Time `json:"expires_at"`
	CreatedAt time.Time `json:"created_at"`
	SettledAt time.Time `json:"settled_at,omitzero"`
	SettledBy string    `json:"settled_by,omitempty"`
	// DecodeError is set when the row did not decode.
	DecodeError string `json:"decode_error,omitempty"`
}

// Uncertain reports whether the reservation's outcome is unknown at now:
// marked uncertain, or still reserved past its expiry.
func (r BudgetReservation) Uncertain(now time.Time) bool {
	return r.Status == ReservationUncertain || (r.Status == ReservationReserved && now.After(r.ExpiresAt))
}

// BudgetUpdate is a compare-and-set on a budget: it must be unretired at
// Version. Ceilings are written as given; Retire retires it.
type BudgetUpdate struct {
	ID        string
	Version   int64
	MaxCost   Micros
	MaxTokens int64
	Retire    bool
	At        time.Time
	By        string
}

// BudgetSettlement moves one call's reservation on one budget from From to
// Status by compare-and-set, recording Actual: settled releases the unused
// part and counts Actual as settled; uncertain moves the whole reservation
// to the uncertain column. Reserved and WindowStart are the reservation's
// own, as its writer or a read of it knows them.
type BudgetSettlement struct {
	CallID      string
	BudgetID    string
	WindowStart time.Time
	Reserved    Amount
	From        ReservationStatus
	Status      ReservationStatus
	Actual      Amount
	At          time.Time
	By          string
}

// BudgetReader is the read side of budgets, implemented by the stores
// (sqlite, postgres).
type BudgetReader interface {
	// ListBudgets reads every budget, retired ones included, in the order
	// they were added.
	ListBudgets(ctx context.Context) ([]Budget, error)
	// ListBudgetUsage reads a budget's windows, newest first, at most limit.
	ListBudgetUsage(ctx context.Context, budgetID string, limit int) ([]BudgetUsage, error)
	// ListReservations reads reservations in the order they were made: of
	// one run (runID), of one budget (budgetID), or of one call (callID);
	// an empty filter is not applied. At most limit.
	ListReservations(ctx context.Context, f ReservationFilter, limit int) ([]BudgetReservation, error)
	// ListPriceVersions reads every price version in the order loaded.
	ListPriceVersions(ctx context.Context) ([]PriceVersion, error)
}

// ReservationFilter narrows ListReservations.
type ReservationFilter struct {
	RunID    string
	BudgetID string
	CallID   string
	// Open keeps only reservations not yet settled.
	Open bool
}

// maxLabels bounds how many labels a run or a budget scope holds, and
// maxLabelPart the bytes of a key or a value.
const (
	maxLabels    = 32
	maxLabelPart = 64
)

// Labels returns the canonical form of a set of labels, "k=v" pairs sorted
// and joined by commas, as Limits.Labels and Budget.Scope hold them. Keys
// and values are 1 to 64 bytes of letters, digits and ._-/:@.
func Labels(kv map[string]string) (string, error) {
	if len(kv) > maxLabels {
		return "", &ConfigError{Field: "labels", Reason: fmt.Sprintf("hold %d labels; at most %d", len(kv), maxLabels)}
	}
	parts := make([]string, 0, len(kv))
	for k, v := range kv {
		if err := checkLabelPart("label key", k); err != nil {
			return "", err
		}
		if err := checkLabelPart(fmt.Sprintf("label %q's value", k), v); err != nil {
			return "", err
		}
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ","), nil
}

// ParseLabels reads labels written "k=v,k=v" (in any order) and returns
// their canonical form.
func ParseLabels(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	kv := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return "", &ConfigError{Field: "labels", Reason: fmt.Sprintf("%q is not key=value", p)}
		}
		if _, dup := kv[k]; dup {
			return "", &ConfigError{Field: "labels", Reason: fmt.Sprintf("name the key %q twice", k)}
		}
		kv[k] = v
	}
	return Labels(kv)
}

func checkLabelPart(what, s string) error {
	if s == "" || len(s) > maxLabelPart {
		return &ConfigError{Field: what, Reason: fmt.Sprintf("must be 1 to %d bytes, got %d", maxLabelPart, len(s))}
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:@", r)
		if !ok {
			return &ConfigError{Field: what, Reason: fmt.Sprintf("%q holds %q; use letters, digits and ._-/:@", s, r)}
		}
	}
	return nil
}

// checkCanonicalLabels refuses labels not in the form Labels makes.
func checkCanonicalLabels(field, s string) error {
	c, err := ParseLabels(s)
	if err != nil {
		return &ConfigError{Field: field, Reason: err.(*ConfigError).Field + " " + err.(*ConfigError).Reason}
	}
	if c != s {
		return &ConfigError{Field: field, Reason: fmt.Sprintf("must be canonical (sorted key=value pairs, as agentrt.Labels makes): write %q", c)}
	}
	return nil
}

// satAdd adds two non-negative counts, saturating at the int64 maximum; a
// negative operand counts as zero.
func satAdd(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
