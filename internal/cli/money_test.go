package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
)

// pricedModel answers every request having read 150 input tokens.
type pricedModel struct{}

func (pricedModel) Name() string     { return "m" }
func (pricedModel) Provider() string { return "scripted" }
func (pricedModel) Generate(context.Context, agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return agentrt.ModelResponse{Text: "ok", StopReason: "end_turn", Usage: agentrt.Usage{InputTokens: 150}}, nil
}

// show prints a run's estimated model cost by Micros.Dollars, the one money
// rule: 150 micros is $0.0002 (half a hundredth of a cent rounds away from
// zero), as budgets and the console print it, where a float format printed
// $0.0001.
func TestShow_EstimatedCostIsPrintedByDollars(t *testing.T) {
	f, st := newBareFixture(t)
	req := agentrt.ModelRequest{MaxOutputTokens: 10, Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Now: f.clock.Now, NewID: f.ids.ID,
		Model: &agentrt.ModelConfig{Model: pricedModel{}}, Prices: agentrt.PriceTable{"m": {InputPerMTok: 1_000_000, OutputPerMTok: 1_000_000}}},
		Agent: agentrt.AgentFunc(func(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
			if _, err := in.Model.Generate(ctx, req); err != nil {
				return agentrt.Decision{}, err
			}
			return scripted.Complete(`{"done":true}`), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.Start(context.Background(), "ask once", agentrt.DefaultLimits())
	st.Close()
	if err != nil || run.EstimatedCost != 150 {
		t.Fatalf("run %+v, %v; want an estimated cost of 150 micros", run, err)
	}
	r := f.run(t, nil, "-db", f.path, "show", run.ID)
	if r.code != ExitOK || !strings.Contains(r.stdout, ", estimated $0.0002\n") {
		t.Fatalf("show: exit %d, want the model line to end estimated $0.0002:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
