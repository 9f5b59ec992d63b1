package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

// cutModel's every request is cut off after it may have been sent: its
// outcome is unknown.
type cutModel struct{}

func (cutModel) Name() string     { return "m" }
func (cutModel) Provider() string { return "scripted" }
func (cutModel) Generate(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return agentrt.ModelResponse{}, io.ErrUnexpectedEOF
}

// An operator adds a budget from the CLI, a run's call under it is cut off
// in flight (its reservation uncertain), budgets show and show RUN say so,
// reconcile settles it at the operator's figure, and set and retire change
// it; each change is a budget.changed event naming who. Bad input is one
// sentence, exit 2, and changes nothing.
func TestBudgets_OperatorAddsShowsAndReconcilesFromTheCLI(t *testing.T) {
	f, st := newBareFixture(t)
	st.Close()
	for _, bad := range [][]string{
		{"budgets", "add", "team", "-window", "week", "-max-tokens", "5"},
		{"budgets", "add", "team", "-window", "day"},
		{"budgets", "add", "team", "-window", "day", "-max-tokens", "5", "-scope", "tenant"},
		{"budgets", "reconcile", "call", "-tokens", "5"},
	} {
		if r := f.run(t, nil, append([]string{"-db", f.path}, append(bad, "-by", "alice")...)...); r.code != ExitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
			t.Errorf("%v: exit %d %q, want a usage error", bad, r.code, r.stderr)
		}
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "list"); r.code != ExitOK || !strings.Contains(r.stdout, "no budgets") {
		t.Fatalf("bad input changed something: %q", r.stdout)
	}
	r := f.run(t, nil, "-db", f.path, "budgets", "add", "team", "-scope", "tenant=acme", "-window", "day", "-max-cost-micros", "100000", "-by", "alice")
	if r.code != ExitOK || !strings.Contains(r.stdout, "budget team added by alice") {
		t.Fatalf("add: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "add", "team", "-window", "day", "-max-tokens", "5", "-by", "alice"); r.code != ExitFailure || !strings.Contains(r.stderr, "already has this name") {
		t.Errorf("a second team: %d %s", r.code, r.stderr)
	}

	st, err := sqlite.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	req := agentrt.ModelRequest{MaxOutputTokens: 100, Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Now: f.clock.Now, NewID: f.ids.ID,
		Model: &agentrt.ModelConfig{Model: cutModel{}}, Prices: agentrt.PriceTable{"m": {InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}}},
		Agent: agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			_, err := in.Model.Generate(ctx, req)
			return agentrt.Decision{}, err
		})})
	if err != nil {
		t.Fatal(err)
	}
	limits := agentrt.DefaultLimits()
	limits.Labels = "tenant=acme"
	run, err := d.Start(context.Background(), "call", limits)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := st.ListReservations(context.Background(), agentrt.ReservationFilter{RunID: run.ID}, 10)
	st.Close()
	if err != nil || len(rs) != 1 || rs[0].Status != agentrt.ReservationUncertain {
		t.Fatalf("reservations %+v, %v; want one uncertain", rs, err)
	}
	res := rs[0]

	r = f.run(t, nil, "-db", f.path, "budgets", "show", "team")
	if r.code != ExitOK || !strings.Contains(r.stdout, "UNCERTAIN") || !strings.Contains(r.stdout, res.CallID) || !strings.Contains(r.stdout, "uncertain") {
		t.Fatalf("show: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = f.run(t, nil, "-db", f.path, "show", run.ID)
	if r.code != ExitOK || !strings.Contains(r.stdout, "MODEL CALL") || !strings.Contains(r.stdout, res.CallID) || !strings.Contains(r.stdout, "uncertain") || !strings.Contains(r.stdout, "scripted/m") {
		t.Fatalf("show RUN: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = f.run(t, nil, "-db", f.path, "-json", "show", run.ID)
	var shown struct {
		ModelCalls []callEgress `json:"model_calls"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.ModelCalls) != 1 || len(shown.ModelCalls[0].Reservations) != 1 ||
		shown.ModelCalls[0].Manifest.SHA256 == "" || !shown.ModelCalls[0].Allowed {
		t.Fatalf("show -json RUN: %v %q", err, r.stdout)
	}

	late := func(e *env) { e.now = func() time.Time { return res.ExpiresAt.Add(time.Hour) } }
	r = f.runWith(t, late, nil, "-db", f.path, "budgets", "reconcile", res.CallID, "-cost-micros", "7700", "-tokens", "40", "-note", "provider export", "-by", "bob")
	if r.code != ExitOK || !strings.Contains(r.stdout, "settled at $0.0077, 40 tokens by bob; $") {
		t.Fatalf("reconcile: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = f.runWith(t, late, nil, "-db", f.path, "-json", "budgets", "show", "team")
	var sh struct {
		Windows []struct {
			agentrt.BudgetUsage
		} `json:"windows"`
		Open []agentrt.BudgetReservation `json:"open_reservations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sh); err != nil || len(sh.Windows) != 1 || sh.Windows[0].Settled != (agentrt.Amount{Cost: 7700, Tokens: 40}) ||
		sh.Windows[0].Uncertain != (agentrt.Amount{}) || len(sh.Open) != 0 {
		t.Fatalf("show -json after reconcile: %v %q", err, r.stdout)
	}
	// Text prints money as show and the console do; -json keeps micros.
	for _, args := range [][]string{{"budgets", "list"}, {"budgets", "show", "team"}, {"show", run.ID}} {
		r := f.runWith(t, late, nil, append([]string{"-db", f.path}, args...)...)
		if r.code != ExitOK || strings.Contains(r.stdout, "micros") || !strings.Contains(r.stdout, "$0.") {
			t.Fatalf("%v: exit %d, want money in dollars and no micros:\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "list"); !strings.Contains(r.stdout, "$0.1000") {
		t.Fatalf("budgets list does not show the $0.1000 ceiling:\n%s", r.stdout)
	}
	if r := f.run(t, nil, "-db", f.path, "-json", "budgets", "list"); !strings.Contains(r.stdout, `"max_cost_micros":100000`) {
		t.Fatalf("budgets -json list lost the ceiling in micros:\n%s", r.stdout)
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "set", "team", "-max-tokens", "9000", "-by", "carol"); r.code != ExitOK || !strings.Contains(r.stdout, "9000 tokens") {
		t.Fatalf("set: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "retire", "team", "-by", "dave"); r.code != ExitOK {
		t.Fatalf("retire: %d %s", r.code, r.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "list"); r.code != ExitOK || !strings.Contains(r.stdout, "retired") || !strings.Contains(r.stdout, "by dave") {
		t.Fatalf("list: %q", r.stdout)
	}
	if r := f.run(t, nil, "-db", f.path, "budgets", "prices"); r.code != ExitOK || !strings.Contains(r.stdout, "sha256:") || !strings.Contains(r.stdout, "intact") {
		t.Fatalf("prices: %q %s", r.stdout, r.stderr)
	}
	st, err = sqlite.OpenExisting(f.path, true)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.ListEventsAfter(context.Background(), "", 0, 1000)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var changes strings.Builder
	for _, ev := range evs {
		if ev.Type == agentrt.EventBudgetChanged {
			changes.Write(ev.Payload)
		}
	}
	for _, who := range []string{`"by":"alice"`, `"by":"carol"`, `"by":"dave"`, `"action":"retired"`} {
		if !strings.Contains(changes.String(), who) {
			t.Errorf("the chain's budget.changed events do not hold %s", who)
		}
	}
}
