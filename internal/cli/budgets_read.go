package cli

import (
	"time"

	"github.com/agentrt/agentrt"
)

// budgetsRead opens the database read-only for a budgets subcommand that
// reads, after checking its positional arguments (NAME for show, none for
// the others). Unless code is ExitOK the command stops; else done closes
// the store.
func (x *inv) budgetsRead(sub string, pos []string) (br agentrt.BudgetReader, name, where string, done func(), code int) {
	name, code, ok := x.subArg(x.c, sub, pos, sub != "show", "NAME")
	if !ok {
		return nil, "", "", nil, code
	}
	st, where, code := x.g.openDB(x.env, x.c, true)
	if code != ExitOK {
		return nil, "", "", nil, code
	}
	br, ok = any(st).(agentrt.BudgetReader)
	if !ok {
		st.Close()
		return nil, "", "", nil, x.fail("this database's backend keeps no budgets")
	}
	return br, name, where, func() { st.Close() }, ExitOK
}

func runBudgetsPrices(x *inv, _ *struct{}, pos []string) int {
	br, _, _, done, code := x.budgetsRead("prices", pos)
	if code != ExitOK {
		return code
	}
	defer done()
	vs, err := br.ListPriceVersions(background())
	if err != nil {
		return x.fail("reading price versions: %v", err)
	}
	p := &printer{w: x.stdout}
	for _, v := range vs {
		if x.g.json {
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
	if len(vs) == 0 && !x.g.json {
		p.printf("no price versions\n")
	}
	return x.done(p, ExitOK)
}

func runBudgetsList(x *inv, _ *struct{}, pos []string) int {
	br, _, _, done, code := x.budgetsRead("list", pos)
	if code != ExitOK {
		return code
	}
	defer done()
	ctx := background()
	bs, err := br.ListBudgets(ctx)
	if err != nil {
		return x.fail("reading budgets: %v", err)
	}
	now := x.clock()
	p := &printer{w: x.stdout}
	tp := p.table()
	if !x.g.json {
		tp.printf("BUDGET\tSCOPE\tWINDOW\tCEILINGS\tCURRENT WINDOW HELD\tSTATUS\n")
	}
	for _, b := range bs {
		ws, err := br.ListBudgetUsage(ctx, b.ID, 1)
		if err != nil {
			return x.fail("reading budget %s: %v", b.Name, err)
		}
		var cur agentrt.BudgetUsage
		if len(ws) == 1 && ws[0].WindowStart.Equal(b.Window.Start(now)) {
			cur = ws[0]
		}
		if x.g.json {
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
		tp.printf("%s\t%s\t%s\t%s\t%s\t%s\n", clip(b.Name, 128), dash(clip(b.Scope, 200)), b.Window, ceilings(b), amount(cur.Held()), status)
	}
	tp.end()
	if len(bs) == 0 && !x.g.json {
		p.printf("no budgets\n")
	}
	return x.done(p, ExitOK)
}

// budgetDetail is what budgets show prints of one budget: its windows,
// newest first, its open reservations, and per window what is still
// reserved past its expiry (uncertain, as reconcile treats it).
type budgetDetail struct {
	b       agentrt.Budget
	windows []agentrt.BudgetUsage
	open    []agentrt.BudgetReservation
	expired map[time.Time]agentrt.Amount
	now     time.Time
}

func runBudgetsShow(x *inv, _ *struct{}, pos []string) int {
	br, name, where, done, code := x.budgetsRead("show", pos)
	if code != ExitOK {
		return code
	}
	defer done()
	d, code := x.readBudgetDetail(br, name, where)
	if code != ExitOK {
		return code
	}
	p := &printer{w: x.stdout}
	if x.g.json {
		d.writeJSON(p)
	} else {
		d.writeText(p)
	}
	return x.done(p, ExitOK)
}

// readBudgetDetail reads the newest budget named name, retired or not.
func (x *inv) readBudgetDetail(br agentrt.BudgetReader, name, where string) (budgetDetail, int) {
	ctx := background()
	bs, err := br.ListBudgets(ctx)
	if err != nil {
		return budgetDetail{}, x.fail("reading budgets: %v", err)
	}
	var b *agentrt.Budget
	for i := range bs {
		if bs[i].Name == name && (b == nil || !bs[i].Retired()) {
			b = &bs[i]
		}
	}
	if b == nil {
		return budgetDetail{}, x.fail("no budget is named %s in %s", name, where)
	}
	d := budgetDetail{b: *b, expired: map[time.Time]agentrt.Amount{}, now: x.clock()}
	if d.windows, err = br.ListBudgetUsage(ctx, b.ID, 50); err != nil {
		return budgetDetail{}, x.fail("reading budget %s: %v", b.Name, err)
	}
	if d.open, err = br.ListReservations(ctx, agentrt.ReservationFilter{BudgetID: b.ID, Open: true}, 1000); err != nil {
		return budgetDetail{}, x.fail("reading budget %s: %v", b.Name, err)
	}
	for _, r := range d.open {
		if r.Status == agentrt.ReservationReserved && r.Uncertain(d.now) {
			a := d.expired[r.WindowStart]
			a.Cost += r.Reserved.Cost
			a.Tokens += r.Reserved.Tokens
			d.expired[r.WindowStart] = a
		}
	}
	return d, ExitOK
}

func (d budgetDetail) writeJSON(p *printer) {
	type window struct {
		agentrt.BudgetUsage
		Expired agentrt.Amount `json:"expired_reserved"`
	}
	out := struct {
		agentrt.Budget
		Windows      []window                    `json:"windows"`
		Reservations []agentrt.BudgetReservation `json:"open_reservations"`
	}{Budget: d.b, Windows: []window{}, Reservations: d.open}
	for _, w := range d.windows {
		out.Windows = append(out.Windows, window{w, d.expired[w.WindowStart]})
	}
	if out.Reservations == nil {
		out.Reservations = []agentrt.BudgetReservation{}
	}
	writeJSON(p, out)
}

func (d budgetDetail) writeText(p *printer) {
	b := d.b
	p.printf("budget    %s\n", clip(b.Name, 128))
	p.printf("id        %s\n", clip(b.ID, 80))
	p.printf("scope     %s\n", dash(clip(b.Scope, 400)))
	p.printf("window    %s\n", b.Window)
	p.printf("ceilings  %s\n", ceilings(b))
	p.printf("version   %d, added %s by %s, last changed %s by %s\n", b.Version, when(b.CreatedAt), clip(b.CreatedBy, 80), when(b.UpdatedAt), clip(b.UpdatedBy, 80))
	if b.Retired() {
		p.printf("retired   %s by %s\n", when(b.RetiredAt), clip(b.RetiredBy, 80))
	}
	p.printf("\n")
	d.writeWindows(p)
	d.writeReservations(p)
}

// writeWindows prints the usage of each window, moving what is reserved
// past its expiry from reserved to uncertain.
func (d budgetDetail) writeWindows(p *printer) {
	if len(d.windows) == 0 {
		p.printf("no usage yet\n")
		return
	}
	tp := p.table()
	tp.printf("WINDOW\tRESERVED\tSETTLED\tUNCERTAIN\tHELD\n")
	for _, w := range d.windows {
		x := d.expired[w.WindowStart]
		start := "all time"
		if !w.WindowStart.IsZero() {
			start = when(w.WindowStart)
		}
		reserved := agentrt.Amount{Cost: w.Reserved.Cost - x.Cost, Tokens: w.Reserved.Tokens - x.Tokens}
		uncertain := agentrt.Amount{Cost: w.Uncertain.Cost + x.Cost, Tokens: w.Uncertain.Tokens + x.Tokens}
		tp.printf("%s\t%s\t%s\t%s\t%s\n", start, amount(reserved), amount(w.Settled), amount(uncertain), amount(w.Held()))
	}
	tp.end()
}

func (d budgetDetail) writeReservations(p *printer) {
	if len(d.open) == 0 {
		return
	}
	tp := p.section("CALL\tRUN\tATTEMPT\tGEN\tMODEL\tRESERVED\tSTATUS\tEXPIRES\tPRICE VERSION")
	for _, r := range d.open {
		status := string(r.Status)
		if r.Status == agentrt.ReservationReserved && r.Uncertain(d.now) {
			status = "uncertain (expired; reconcile it)"
		}
		tp.printf("%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", clip(r.CallID, 80), clip(r.RunID, 80), r.Attempt, r.Generation,
			clip(r.Model, 80), amount(r.Reserved), status, when(r.ExpiresAt), dash(clip(r.PriceVersion, 80)))
	}
	tp.end()
}
