//go:build unix

package agentrt_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// bbModel answers at once with a small usage.
type bbModel struct{}

func (bbModel) Name() string     { return "bench-model" }
func (bbModel) Provider() string { return "scripted" }
func (bbModel) Generate(_ context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 20, OutputTokens: 10}}, nil
}

// bbAgent asks the model once per step, then makes the step's tool call;
// its last step completes.
type bbAgent struct{ n int }

func (a bbAgent) Decide(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	if _, err := in.Model.Generate(ctx, mcReq(64)); err != nil {
		return agentrt.Decision{}, err
	}
	return kit.BenchAgent{N: a.n}.Decide(ctx, in)
}

// bbEngine is the engine of the budget benchmarks: a budget and egress
// rules that admit everything when budgeted, none of either when not.
func bbEngine(t testing.TB, st agentrt.Store, budgeted bool) agentrt.EngineConfig {
	cfg := agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{echoTool(false)},
		Model: &agentrt.ModelConfig{Model: bbModel{}}}
	if budgeted {
		cfg.Prices = agentrt.PriceTable{"bench-model": {InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}}
		cfg.Egress = &agentrt.EgressRules{Providers: []string{"scripted"}, MaxRequestBytes: 1 << 20}
		if _, err := (agentrt.Operator{Store: st}).AddBudget(context.Background(), agentrt.NewBudget{Name: "bench", Scope: "tenant=acme",
			Window: agentrt.WindowDay, MaxCost: 1 << 50, MaxTokens: 1 << 50, By: "bench"}); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// A model call commits twice, its dispatch and its outcome, with no
// budget; under a budget, with egress rules and a price version, it still
// commits twice: the reservation and manifest ride in the dispatch commit
// and the settlement in the outcome's.
func TestBudget_ReservationAndSettlementRideInTheCommitsOfTheCall(t *testing.T) {
	const n = 10
	counts := map[bool]int64{}
	for _, budgeted := range []bool{false, true} {
		cs := &countingStore{Store: benchStoreT(t)}
		cfg := bbEngine(t, cs.Store, budgeted)
		cfg.Store = cs
		d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: cfg, Agent: bbAgent{n}})
		if err != nil {
			t.Fatal(err)
		}
		limits := agentrt.DefaultLimits()
		limits.MaxSteps, limits.Labels = n+1, "tenant=acme"
		run, err := d.Start(context.Background(), "count", limits)
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("budgeted=%v: %v %s %s", budgeted, err, run.Status, run.ReasonDetail)
		}
		counts[budgeted] = cs.commits.Load()
		if want := int64(1+3*(n-1)+3) + 2*n; counts[budgeted] != want {
			t.Errorf("budgeted=%v: %d commits, want %d (3 per tool step, 2 per model call)", budgeted, counts[budgeted], want)
		}
		rs, err := cs.Store.(agentrt.BudgetReader).ListReservations(context.Background(), agentrt.ReservationFilter{RunID: run.ID}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if budgeted && len(rs) != n || !budgeted && len(rs) != 0 {
			t.Errorf("budgeted=%v: %d reservations", budgeted, len(rs))
		}
	}
	if counts[true] != counts[false] {
		t.Errorf("a budget adds commits: %d with, %d without", counts[true], counts[false])
	}
}

// BenchmarkBudgetConcurrentRuns runs 32 runs at once on one database, each
// of 10 steps with one model call per step, without and with one shared
// budget (and egress rules); the figure is aggregate steps per second.
func BenchmarkBudgetConcurrentRuns(b *testing.B) {
	for _, budgeted := range []bool{false, true} {
		b.Run(fmt.Sprintf("budget=%v", budgeted), func(b *testing.B) {
			const runs, n = 32, 10
			s := benchStore(b)
			d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: bbEngine(b, s, budgeted), Agent: bbAgent{n}})
			if err != nil {
				b.Fatal(err)
			}
			limits := agentrt.DefaultLimits()
			limits.MaxSteps, limits.Labels = n+1, "tenant=acme"
			drivers := slices.Repeat([]*agentrt.Driver{d}, runs)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				kit.StartAll(b, drivers, limits)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*runs*n)/b.Elapsed().Seconds(), "steps/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*runs*n), "cpu-µs/step")
			st := s.Stats()
			b.ReportMetric(float64(st.Updates)/float64(st.Commits), "updates/commit")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
