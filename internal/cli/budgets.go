package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

var budgetsCommand = &command{
	name:    "budgets",
	summary: "add, change, retire, list and show the budgets runs share, and reconcile uncertain calls",
	usage: "list | show NAME | add NAME -window W (-max-cost-micros N | -max-tokens N) [-scope k=v,...] | " +
		"set NAME (-max-cost-micros N | -max-tokens N) | retire NAME | reconcile CALL -cost-micros N -tokens N [-note TEXT] | prices",
	subs: []string{"list", "show", "add", "set", "retire", "reconcile", "prices"},
	run:  runBudgets,
}

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

func runBudgets(e *env, g *global, c *command, args []string) int {
	if len(args) == 0 {
		return e.usageError(c, "missing the budgets command: list, show, add, set, retire, reconcile or prices")
	}
	sub, args := args[0], args[1:]
	if !c.hasSub(sub) {
		return e.usageError(c, fmt.Sprintf("unknown budgets command %q", trace.Sanitize(trace.Truncate(sub, 40))))
	}
	fs := e.flags(c, g)
	by := fs.String("by", "", "who is doing this, recorded as given (default $USER, else your account's name)")
	var scope, window, note *string
	var maxCost, maxTokens, cost, tokens *int64
	switch sub {
	case "list", "show", "retire", "prices":
	case "add":
		scope = fs.String("scope", "", "labels a run must carry, k=v,k=v (default: every run)")
		window = fs.String("window", "", "hour, day, month or none")
		fallthrough
	case "set":
		maxCost = fs.Int64("max-cost-micros", 0, "the cost ceiling in micros (0: none)")
		maxTokens = fs.Int64("max-tokens", 0, "the token ceiling (0: none)")
	case "reconcile":
		cost = fs.Int64("cost-micros", -1, "the call's actual cost in micros")
		tokens = fs.Int64("tokens", -1, "the call's actual tokens, input plus output")
		note = fs.String("note", "", "where the figure comes from")
	default:
		return e.usageError(c, fmt.Sprintf("unknown budgets command %q", trace.Sanitize(trace.Truncate(sub, 40))))
	}
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	e.defaultBy(fs, by)
	name, code, ok := e.subArg(c, sub, pos, sub == "list" || sub == "prices", map[bool]string{true: "CALL", false: "NAME"}[sub == "reconcile"])
	if !ok {
		return code
	}
	switch sub {
	case "add", "set", "retire", "reconcile":
		if *by == "" {
			return e.usageError(c, "no one to record: pass -by WHO (a label, recorded as given), since neither USER nor the system's user database names this account")
		}
	}
	switch sub {
	case "add":
		if !agentrt.BudgetWindow(*window).Valid() {
			return e.usageError(c, "budgets add needs -window hour, day, month or none")
		}
		if _, err := agentrt.ParseLabels(*scope); err != nil {
			return e.usageError(c, "-scope: "+strings.TrimPrefix(err.Error(), "agentrt: invalid configuration: "))
		}
		fallthrough
	case "set":
		if *maxCost < 0 || *maxTokens < 0 || (*maxCost == 0 && *maxTokens == 0) {
			return e.usageError(c, "budgets "+sub+" needs -max-cost-micros N or -max-tokens N (or both), not negative")
		}
	case "reconcile":
		if *cost < 0 || *tokens < 0 {
			return e.usageError(c, "budgets reconcile needs the call's actual -cost-micros N and -tokens N")
		}
	}
	readOnly := sub == "list" || sub == "show" || sub == "prices"
	st, where, code := g.openDB(e, c, readOnly)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	br, ok := any(st).(agentrt.BudgetReader)
	if !ok {
		return e.fail("this database's backend keeps no budgets")
	}
	ctx := background()
	op := agentrt.Operator{Store: st, Now: e.now}
	p := &printer{w: e.stdout}
	refusal := func(err error) int {
		if errors.Is(err, agentrt.ErrNotFound) {
			return e.fail("no unretired budget is named %s; nothing was changed", name)
		}
		return e.fail("%s; nothing was changed", strings.TrimPrefix(err.Error(), "agentrt: "))
	}
	changed := func(b agentrt.Budget, what string) int {
		if g.json {
			writeJSON(p, b)
		} else {
			p.printf("budget %s %s by %s: %s\n", clip(b.Name, 128), what, clip(*by, 80), ceilings(b))
		}
		return e.done(p, ExitOK)
	}
	switch sub {
	case "add":
		b, err := op.AddBudget(ctx, agentrt.NewBudget{Name: name, Scope: *scope, Window: agentrt.BudgetWindow(*window),
			MaxCost: agentrt.Micros(*maxCost), MaxTokens: *maxTokens, By: *by})
		if err != nil {
			return refusal(err)
		}
		return changed(b, "added")
	case "set":
		b, err := op.SetBudget(ctx, name, agentrt.Micros(*maxCost), *maxTokens, *by)
		if err != nil {
			return refusal(err)
		}
		return changed(b, "set")
	case "retire":
		b, err := op.RetireBudget(ctx, name, *by)
		if err != nil {
			return refusal(err)
		}
		return changed(b, "retired")
	case "reconcile":
		done, err := op.ReconcileReservation(ctx, name, agentrt.Amount{Cost: agentrt.Micros(*cost), Tokens: *tokens}, *by, *note)
		if err != nil {
			return e.fail("%s; nothing was changed", strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		for _, r := range done {
			if g.json {
				writeJSON(p, r)
				continue
			}
			p.printf("call %s on budget %s: settled at %d micros, %d tokens by %s; %d micros, %d tokens released\n",
				clip(r.CallID, 80), clip(r.BudgetID, 80), r.Actual.Cost, r.Actual.Tokens, clip(*by, 80),
				max(r.Reserved.Cost-r.Actual.Cost, 0), max(r.Reserved.Tokens-r.Actual.Tokens, 0))
		}
		return e.done(p, ExitOK)
	case "prices":
		vs, err := br.ListPriceVersions(ctx)
		if err != nil {
			return e.fail("reading price versions: %v", err)
		}
		for _, v := range vs {
			if g.json {
				writeJSON(p, struct {
					agentrt.PriceVersion
					Table string `json:"table"`
				}{v, string(v.Canonical)})
				continue
			}
			status := "intact"
			if v.DecodeError != "" {
				status = "DAMAGED: " + v.DecodeError
			}
			p.printf("%s  loaded %s  %s\n  %s\n", clip(v.ID, 80), when(v.CreatedAt), clip(status, 200), capped(string(v.Canonical), textClipBytes))
		}
		if len(vs) == 0 && !g.json {
			p.printf("no price versions\n")
		}
		return e.done(p, ExitOK)
	}
	bs, err := br.ListBudgets(ctx)
	if err != nil {
		return e.fail("reading budgets: %v", err)
	}
	now := e.clock()
	if sub == "list" {
		tp := p.table()
		if !g.json {
			tp.printf("BUDGET\tSCOPE\tWINDOW\tCEILINGS\tCURRENT WINDOW HELD\tSTATUS\n")
		}
		for _, b := range bs {
			ws, err := br.ListBudgetUsage(ctx, b.ID, 1)
			if err != nil {
				return e.fail("reading budget %s: %v", b.Name, err)
			}
			var cur agentrt.BudgetUsage
			if len(ws) == 1 && ws[0].WindowStart.Equal(b.Window.Start(now)) {
				cur = ws[0]
			}
			if g.json {
				writeJSON(p, struct {
					agentrt.Budget
					Current agentrt.BudgetUsage `json:"current_window"`
				}{b, cur})
				continue
			}
			status := "active"
			if b.Retired() {
				status = "retired " + when(b.RetiredAt) + " by " + clip(b.RetiredBy, 40)
			}
			h := cur.Held()
			tp.printf("%s\t%s\t%s\t%s\t%d micros, %d tokens\t%s\n", clip(b.Name, 128), dash(clip(b.Scope, 200)), b.Window, ceilings(b), h.Cost, h.Tokens, status)
		}
		tp.end()
		if len(bs) == 0 && !g.json {
			p.printf("no budgets\n")
		}
		return e.done(p, ExitOK)
	}
	// show: the newest budget of the name, retired or not.
	var b *agentrt.Budget
	for i := range bs {
		if bs[i].Name == name && (b == nil || !bs[i].Retired()) {
			b = &bs[i]
		}
	}
	if b == nil {
		return e.fail("no budget is named %s in %s", name, where)
	}
	ws, err := br.ListBudgetUsage(ctx, b.ID, 50)
	if err != nil {
		return e.fail("reading budget %s: %v", b.Name, err)
	}
	open, err := br.ListReservations(ctx, agentrt.ReservationFilter{BudgetID: b.ID, Open: true}, 1000)
	if err != nil {
		return e.fail("reading budget %s: %v", b.Name, err)
	}
	// A reservation still reserved past its expiry lost its process: it is
	// shown as uncertain, as reconcile treats it.
	expired := map[time.Time]agentrt.Amount{}
	for _, r := range open {
		if r.Status == agentrt.ReservationReserved && r.Uncertain(now) {
			a := expired[r.WindowStart]
			a.Cost += r.Reserved.Cost
			a.Tokens += r.Reserved.Tokens
			expired[r.WindowStart] = a
		}
	}
	if g.json {
		type window struct {
			agentrt.BudgetUsage
			Expired agentrt.Amount `json:"expired_reserved"`
		}
		out := struct {
			agentrt.Budget
			Windows      []window                    `json:"windows"`
			Reservations []agentrt.BudgetReservation `json:"open_reservations"`
		}{Budget: *b, Windows: []window{}, Reservations: open}
		for _, w := range ws {
			out.Windows = append(out.Windows, window{w, expired[w.WindowStart]})
		}
		if out.Reservations == nil {
			out.Reservations = []agentrt.BudgetReservation{}
		}
		writeJSON(p, out)
		return e.done(p, ExitOK)
	}
	p.printf("budget    %s\n", clip(b.Name, 128))
	p.printf("id        %s\n", clip(b.ID, 80))
	p.printf("scope     %s\n", dash(clip(b.Scope, 400)))
	p.printf("window    %s\n", b.Window)
	p.printf("ceilings  %s\n", ceilings(*b))
	p.printf("version   %d, added %s by %s, last changed %s by %s\n", b.Version, when(b.CreatedAt), clip(b.CreatedBy, 80), when(b.UpdatedAt), clip(b.UpdatedBy, 80))
	if b.Retired() {
		p.printf("retired   %s by %s\n", when(b.RetiredAt), clip(b.RetiredBy, 80))
	}
	p.printf("\n")
	if len(ws) == 0 {
		p.printf("no usage yet\n")
	} else {
		tp := p.table()
		tp.printf("WINDOW\tRESERVED\tSETTLED\tUNCERTAIN\tHELD\n")
		for _, w := range ws {
			x := expired[w.WindowStart]
			start := "all time"
			if !w.WindowStart.IsZero() {
				start = when(w.WindowStart)
			}
			h := w.Held()
			tp.printf("%s\t%s\t%s\t%s\t%s\n", start, amount(agentrt.Amount{Cost: w.Reserved.Cost - x.Cost, Tokens: w.Reserved.Tokens - x.Tokens}),
				amount(w.Settled), amount(agentrt.Amount{Cost: w.Uncertain.Cost + x.Cost, Tokens: w.Uncertain.Tokens + x.Tokens}), amount(h))
		}
		tp.end()
	}
	if len(open) > 0 {
		p.printf("\n")
		tp := p.table()
		tp.printf("CALL\tRUN\tATTEMPT\tGEN\tMODEL\tRESERVED\tSTATUS\tEXPIRES\tPRICE VERSION\n")
		for _, r := range open {
			status := string(r.Status)
			if r.Status == agentrt.ReservationReserved && r.Uncertain(now) {
				status = "uncertain (expired; reconcile it)"
			}
			tp.printf("%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", clip(r.CallID, 80), clip(r.RunID, 80), r.Attempt, r.Generation,
				clip(r.Model, 80), amount(r.Reserved), status, when(r.ExpiresAt), dash(clip(r.PriceVersion, 80)))
		}
		tp.end()
	}
	return e.done(p, ExitOK)
}

func ceilings(b agentrt.Budget) string {
	var parts []string
	if b.MaxCost > 0 {
		parts = append(parts, fmt.Sprintf("%d micros", b.MaxCost))
	}
	if b.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.MaxTokens))
	}
	return strings.Join(parts, ", ")
}

func amount(a agentrt.Amount) string { return fmt.Sprintf("%d micros, %d tokens", a.Cost, a.Tokens) }

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
	p.printf("\n")
	tp := p.table()
	tp.printf("MODEL CALL\tATTEMPT\tEGRESS\tPROVIDER/MODEL\tHOST\tBYTES\tSHA-256\tMSGS/TOOLS\tRESERVATIONS\n")
	for _, c := range calls {
		verdict := "allowed"
		if !c.Allowed {
			verdict = "DENIED: " + c.Reason
		}
		var rs []string
		for _, r := range c.Reservations {
			s := fmt.Sprintf("%s %d micros/%d tokens %s", clip(r.BudgetID, 40), r.Reserved.Cost, r.Reserved.Tokens, r.Status)
			switch {
			case r.Status == agentrt.ReservationSettled:
				s += fmt.Sprintf(" at %d/%d", r.Actual.Cost, r.Actual.Tokens)
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
