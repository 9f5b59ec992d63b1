package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cliflag"
)

var budgetsCommand = fromKit(&kitCmd{
	Name:    "budgets",
	Summary: "add, change, retire, list and show the budgets runs share, and reconcile uncertain calls",
	Usage: "list | show NAME | add NAME -window W (-max-cost-micros N | -max-tokens N) [-scope k=v,...] | " +
		"set NAME (-max-cost-micros N | -max-tokens N) | retire NAME | reconcile CALL -cost-micros N -tokens N [-note TEXT] | prices",
	Subs: []*kitCmd{
		{Name: "list", Bind: cliflag.With[*inv, struct{}](nil, runBudgetsList)},
		{Name: "show", Bind: cliflag.With[*inv, struct{}](nil, runBudgetsShow)},
		{Name: "add", Bind: cliflag.With(budgetAddFlags, runBudgetsAdd)},
		{Name: "set", Bind: cliflag.With(budgetCeilingFlags, runBudgetsSet)},
		{Name: "retire", Bind: cliflag.With(func(fs *flag.FlagSet, o *budgetRetireOptions) { o.by.register(fs) }, runBudgetsRetire)},
		{Name: "reconcile", Bind: cliflag.With(budgetReconcileFlags, runBudgetsReconcile)},
		{Name: "prices", Bind: cliflag.With[*inv, struct{}](nil, runBudgetsPrices)},
	},
})

func init() {
	commandHelp["budgets"] = `A budget caps the model calls of every run whose labels cover its scope,
whichever process makes them, in a fixed window (hour, day, month, none).
Each call reserves its upper bound before it is sent and settles its actual
usage after; a call whose outcome is unknown stays uncertain, holding its
reservation, until reconciled. Every change is an event in the chain naming
who made it (-by, default $USER, else your account's name). Budgets are retired, never deleted.
  list                    every budget, retired ones too, with its current
                          window
  show NAME               a budget's windows (reserved, settled, uncertain)
                          and its unsettled reservations
  add NAME -window W      add a budget; -scope k=v,k=v (default: every run),
                          -max-cost-micros N and/or -max-tokens N
  set NAME                change its ceilings (-max-cost-micros, -max-tokens)
  retire NAME             retire it: it applies to no new call
  reconcile CALL          settle the uncertain reservations of a model call
                          at -cost-micros N -tokens N (an operator's figure
                          or the provider's usage record), releasing the rest;
                          -note TEXT says where the figure comes from
  prices                  the price versions calls were charged at`
}

// budgetCeilings are the ceilings budgets add and set take.
type budgetCeilings struct {
	by                 byFlag
	maxCost, maxTokens int64
}

func budgetCeilingFlags(fs *flag.FlagSet, o *budgetCeilings) {
	o.by.register(fs)
	fs.Int64Var(&o.maxCost, "max-cost-micros", 0, "the cost ceiling in micros (0: none)")
	fs.Int64Var(&o.maxTokens, "max-tokens", 0, "the token ceiling (0: none)")
}

// check refuses ceilings that cap nothing or are negative.
func (o *budgetCeilings) check(x *inv, sub string) int {
	if o.maxCost < 0 || o.maxTokens < 0 || (o.maxCost == 0 && o.maxTokens == 0) {
		return x.usageError(x.c, "budgets "+sub+" needs -max-cost-micros N or -max-tokens N (or both), not negative")
	}
	return ExitOK
}

// budgetAddOptions are budgets add's flags.
type budgetAddOptions struct {
	budgetCeilings
	scope, window string
}

func budgetAddFlags(fs *flag.FlagSet, o *budgetAddOptions) {
	budgetCeilingFlags(fs, &o.budgetCeilings)
	fs.StringVar(&o.scope, "scope", "", "labels a run must carry, k=v,k=v (default: every run)")
	fs.StringVar(&o.window, "window", "", "hour, day, month or none")
}

type budgetRetireOptions struct{ by byFlag }

// budgetReconcileOptions are budgets reconcile's flags: the call's actual
// usage and where the figure comes from.
type budgetReconcileOptions struct {
	by           byFlag
	cost, tokens int64
	note         string
}

func budgetReconcileFlags(fs *flag.FlagSet, o *budgetReconcileOptions) {
	o.by.register(fs)
	fs.Int64Var(&o.cost, "cost-micros", -1, "the call's actual cost in micros")
	fs.Int64Var(&o.tokens, "tokens", -1, "the call's actual tokens, input plus output")
	fs.StringVar(&o.note, "note", "", "where the figure comes from")
}

// budgetChange is a budgets subcommand that changes something, once its
// arguments are checked: the budget or call it names, who is changing it,
// and the operator that changes it.
type budgetChange struct {
	x        *inv
	name, by string
	op       agentrt.Operator
	p        *printer
}

// beginChange checks a changing subcommand's one argument (what it names)
// and -by, then opens the database for writing. The check runs before the
// open; done closes the store. Unless code is ExitOK the command stops.
func (x *inv) beginChange(sub, what string, pos []string, by *byFlag, check func() int) (bc budgetChange, done func(), code int) {
	name, who, st, code := x.beginNamed(sub, what, pos, by, func(string) int { return check() })
	if code != ExitOK {
		return bc, nil, code
	}
	if _, ok := any(st).(agentrt.BudgetReader); !ok {
		st.Close()
		return bc, nil, x.fail("this database's backend keeps no budgets")
	}
	bc = budgetChange{x: x, name: name, by: who, op: agentrt.Operator{Store: st, Now: x.now}, p: &printer{w: x.stdout}}
	return bc, func() { st.Close() }, ExitOK
}

// changed prints the budget a change left, or why it was refused.
func (bc budgetChange) changed(b agentrt.Budget, err error, what string) int {
	switch {
	case errors.Is(err, agentrt.ErrNotFound):
		return bc.x.fail("no unretired budget is named %s; nothing was changed", bc.name)
	case err != nil:
		return bc.x.fail("%s; nothing was changed", strings.TrimPrefix(err.Error(), "agentrt: "))
	case bc.x.g.json:
		writeJSON(bc.p, b)
	default:
		bc.p.printf("budget %s %s by %s: %s\n", clip(b.Name, 128), what, clip(bc.by, 80), ceilings(b))
	}
	return bc.x.done(bc.p, ExitOK)
}

func runBudgetsAdd(x *inv, o *budgetAddOptions, pos []string) int {
	bc, done, code := x.beginChange("add", "NAME", pos, &o.by, func() int {
		if !agentrt.BudgetWindow(o.window).Valid() {
			return x.usageError(x.c, "budgets add needs -window hour, day, month or none")
		}
		if _, err := agentrt.ParseLabels(o.scope); err != nil {
			return x.usageError(x.c, "-scope: "+strings.TrimPrefix(err.Error(), "agentrt: invalid configuration: "))
		}
		return o.check(x, "add")
	})
	if code != ExitOK {
		return code
	}
	defer done()
	b, err := bc.op.AddBudget(background(), agentrt.NewBudget{Name: bc.name, Scope: o.scope, Window: agentrt.BudgetWindow(o.window),
		MaxCost: agentrt.Micros(o.maxCost), MaxTokens: o.maxTokens, By: bc.by})
	return bc.changed(b, err, "added")
}

func runBudgetsSet(x *inv, o *budgetCeilings, pos []string) int {
	bc, done, code := x.beginChange("set", "NAME", pos, &o.by, func() int { return o.check(x, "set") })
	if code != ExitOK {
		return code
	}
	defer done()
	b, err := bc.op.SetBudget(background(), bc.name, agentrt.Micros(o.maxCost), o.maxTokens, bc.by)
	return bc.changed(b, err, "set")
}

func runBudgetsRetire(x *inv, o *budgetRetireOptions, pos []string) int {
	bc, done, code := x.beginChange("retire", "NAME", pos, &o.by, func() int { return ExitOK })
	if code != ExitOK {
		return code
	}
	defer done()
	b, err := bc.op.RetireBudget(background(), bc.name, bc.by)
	return bc.changed(b, err, "retired")
}

func runBudgetsReconcile(x *inv, o *budgetReconcileOptions, pos []string) int {
	bc, done, code := x.beginChange("reconcile", "CALL", pos, &o.by, func() int {
		if o.cost < 0 || o.tokens < 0 {
			return x.usageError(x.c, "budgets reconcile needs the call's actual -cost-micros N and -tokens N")
		}
		return ExitOK
	})
	if code != ExitOK {
		return code
	}
	defer done()
	settled, err := bc.op.ReconcileReservation(background(), bc.name, agentrt.Amount{Cost: agentrt.Micros(o.cost), Tokens: o.tokens}, bc.by, o.note)
	if err != nil {
		return x.fail("%s; nothing was changed", strings.TrimPrefix(err.Error(), "agentrt: "))
	}
	for _, r := range settled {
		if x.g.json {
			writeJSON(bc.p, r)
			continue
		}
		released := agentrt.Amount{Cost: max(r.Reserved.Cost-r.Actual.Cost, 0), Tokens: max(r.Reserved.Tokens-r.Actual.Tokens, 0)}
		bc.p.printf("call %s on budget %s: settled at %s by %s; %s released\n",
			clip(r.CallID, 80), clip(r.BudgetID, 80), amount(r.Actual), clip(bc.by, 80), amount(released))
	}
	return x.done(bc.p, ExitOK)
}

func ceilings(b agentrt.Budget) string {
	var parts []string
	if b.MaxCost > 0 {
		parts = append(parts, b.MaxCost.Dollars())
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.MaxTokens))
	}
	return strings.Join(parts, ", ")
}

// amount is money and tokens as every text output prints them: the money
// by Micros.Dollars, as show and the console print it (-json keeps micros).
func amount(a agentrt.Amount) string { return fmt.Sprintf("%s, %d tokens", a.Cost.Dollars(), a.Tokens) }

// callEgress is one model call's request as show lists it: its manifest,
// whether the egress rules allowed it, and its budget reservations.
type callEgress struct {
	CallID       string                      `json:"call_id"`
	Attempt      int                         `json:"attempt"`
	Allowed      bool                        `json:"allowed"`
	Reason       string                      `json:"reason,omitempty"`
	Manifest     agentrt.EgressManifest      `json:"manifest"`
	PriceVersion string                      `json:"price_version,omitempty"`
	Reservations []agentrt.BudgetReservation `json:"reservations,omitempty"`
}

// maxShownCalls bounds the model calls show reads for a run.
const maxShownCalls = 1000

// runCalls reads the manifests of a run's provider requests (from its
// model.dispatched and egress.denied events) and their reservations.
func runCalls(st agentrt.StoreReader, runID string) ([]callEgress, error) {
	ctx := background()
	var out []callEgress
	byCall := map[string]int{}
	for offset := 0; len(out) < maxShownCalls; {
		evs, total, err := st.ListEventsPage(ctx, runID, 500, offset)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			var c callEgress
			switch ev.Type {
			case agentrt.EventModelDispatched:
				var p struct {
					CallID       string                  `json:"call_id"`
					Attempt      int                     `json:"attempt"`
					Egress       *agentrt.EgressManifest `json:"egress"`
					PriceVersion string                  `json:"price_version"`
				}
				if json.Unmarshal(ev.Payload, &p) != nil {
					continue
				}
				c = callEgress{CallID: p.CallID, Attempt: p.Attempt, Allowed: true, PriceVersion: p.PriceVersion}
				if p.Egress != nil {
					c.Manifest = *p.Egress
				}
			case agentrt.EventEgressDenied:
				var p struct {
					agentrt.EgressManifest
					Reason string `json:"reason"`
				}
				if json.Unmarshal(ev.Payload, &p) != nil {
					continue
				}
				c = callEgress{CallID: p.CallID, Attempt: p.Attempt, Reason: p.Reason, Manifest: p.EgressManifest}
			default:
				continue
			}
			byCall[c.CallID] = len(out)
			out = append(out, c)
		}
		offset += len(evs)
		if len(evs) == 0 || offset >= total {
			break
		}
	}
	if br, ok := st.(agentrt.BudgetReader); ok && len(out) > 0 {
		rs, err := br.ListReservations(ctx, agentrt.ReservationFilter{RunID: runID}, 10_000)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if i, ok := byCall[r.CallID]; ok {
				out[i].Reservations = append(out[i].Reservations, r)
			}
		}
	}
	return out, nil
}

// writeRunCalls prints each model call's manifest and reservations.
func writeRunCalls(p *printer, calls []callEgress, now time.Time) {
	if len(calls) == 0 {
		return
	}
	tp := p.section("MODEL CALL\tATTEMPT\tEGRESS\tPROVIDER/MODEL\tHOST\tBYTES\tSHA-256\tMSGS/TOOLS\tRESERVATIONS")
	for _, c := range calls {
		verdict := "allowed"
		if !c.Allowed {
			verdict = "DENIED: " + c.Reason
		}
		var rs []string
		for _, r := range c.Reservations {
			s := fmt.Sprintf("%s %s/%d tokens %s", clip(r.BudgetID, 40), r.Reserved.Cost.Dollars(), r.Reserved.Tokens, r.Status)
			switch {
			case r.Status == agentrt.ReservationSettled:
				s += fmt.Sprintf(" at %s/%d", r.Actual.Cost.Dollars(), r.Actual.Tokens)
			case r.Uncertain(now):
				s += " (uncertain)"
			}
			rs = append(rs, s)
		}
		m := c.Manifest
		sha := m.SHA256
		if len(sha) > 16 {
			sha = sha[:16] + "…"
		}
		tp.printf("%s\t%d\t%s\t%s/%s\t%s\t%d\t%s\t%d/%d\t%s\n", clip(c.CallID, 80), c.Attempt, clip(verdict, cellClipBytes),
			dash(clip(m.Provider, 40)), clip(m.Model, 80), dash(clip(m.Host, 80)), m.Bytes, dash(clip(sha, 80)), m.Messages, m.Tools,
			dash(strings.Join(rs, "; ")))
	}
	tp.end()
}

// clock is the env's clock, or the wall clock.
func (e *env) clock() time.Time {
	if e.now != nil {
		return e.now().UTC()
	}
	return time.Now().UTC()
}
