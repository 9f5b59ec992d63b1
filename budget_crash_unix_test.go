//go:build unix

package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// The child of the budget SIGKILL test is this test binary run again with
// this variable naming the database.
const bkChildDB = "AGENTRT_TEST_BUDGET_CRASH_DB"

// bkRequest is what every run of the test asks the model.
var bkRequest = mcReq(200)

// bkBlockingModel says "sent" on stdout once a request is in flight, then
// never answers: the parent kills the process there.
type bkBlockingModel struct{}

func (bkBlockingModel) Name() string { return "m" }
func (bkBlockingModel) Generate(ctx context.Context, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	fmt.Println("sent")
	os.Stdout.Sync()
	select {}
}

func bkConfig(st agentrt.Store, m agentrt.Model, owner string) agentrt.EngineConfig {
	return agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), LeaseOwner: owner, LeaseTTL: lkChildTTL,
		Model: &agentrt.ModelConfig{Model: m, CallTimeout: time.Second}, Prices: agentrt.PriceTable{"m": bgPrice}}
}

func bkLimits() agentrt.Limits {
	l := agentrt.DefaultLimits()
	l.Labels = "tenant=acme"
	return l
}

func bkChild(t *testing.T) {
	st := openAt(t, os.Getenv(bkChildDB))
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: bkConfig(st, bkBlockingModel{}, "child"), Agent: &mcOnce{req: bkRequest}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.StartWithID(context.Background(), "killed", "call the model", bkLimits())
	t.Fatalf("the child's run returned %s, %v; it should have been killed", run.Status, err)
}

// A worker process is killed with SIGKILL while its model request is in
// flight. Its reservation stays on the budget, holding capacity: a new
// run's call is refused, the killed run resumed by another worker is
// refused too (no worker releases it), and reconcile is refused while the
// reservation is within its expiry. After it, an operator's reconcile
// settles exactly the figure given and releases the rest, and calls are
// admitted again.
func TestBudget_KilledWorkerLeavesUncertainReservationsHoldingCapacity(t *testing.T) {
	if inCrashChild(t, bkChildDB, bkChild) {
		return
	}
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "agentrt.db")
	st := openAt(t, dbPath)
	defer st.Close()
	bound := bgBound(bkRequest)
	b, err := agentrt.Operator{Store: st}.AddBudget(ctx, agentrt.NewBudget{Name: "acme", Scope: "tenant=acme", Window: agentrt.WindowNone,
		MaxCost: bound.Cost + bound.Cost/2, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}

	killChildAt(t, "TestBudget_KilledWorkerLeavesUncertainReservationsHoldingCapacity", "sent", bkChildDB+"="+dbPath)

	rs, err := st.ListReservations(ctx, agentrt.ReservationFilter{RunID: "killed"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Status != agentrt.ReservationReserved || rs[0].Reserved != bound || rs[0].Generation != 1 ||
		rs[0].Model != "m" || rs[0].MaxOutputTokens != bkRequest.MaxOutputTokens || rs[0].PriceVersion == "" {
		t.Fatalf("after SIGKILL: reservations %+v, want one reserved at %+v binding generation 1, the model, its cap and a price version", rs, bound)
	}
	res := rs[0]
	killedLease := kit.MustRun(t, st, "killed").LeaseExpiresAt
	held := func() agentrt.BudgetUsage {
		ws, err := st.ListBudgetUsage(ctx, b.ID, 10)
		if err != nil || len(ws) != 1 {
			t.Fatalf("windows %+v, %v", ws, err)
		}
		return ws[0]
	}

	// The held capacity refuses a new run's call before it is sent.
	m := &mcModel{name: "m", GenerateFunc: mcReply(agentrt.Usage{InputTokens: 5, OutputTokens: 5})}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: bkConfig(st, m, "parent"), Agent: &mcOnce{req: bkRequest}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.StartWithID(ctx, "next", "call the model", bkLimits())
	if err != nil {
		t.Fatal(err)
	}
	kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitBudget)
	// The killed run, taken over once the child's lease lapses, is refused
	// too: its old reservation is not released by the new worker.
	run, err = resumePastDeadLease(t, d, "killed", killedLease)
	if err != nil {
		t.Fatal(err)
	}
	kit.RequireEnded(t, run, agentrt.RunFailed, agentrt.ReasonLimitBudget)
	if len(m.requests()) != 0 {
		t.Fatalf("%d requests reached the model while the reservation held the capacity", len(m.requests()))
	}
	if u := held(); u.Reserved != bound || u.Settled != (agentrt.Amount{}) {
		t.Fatalf("window %+v, want the killed call's %+v still reserved", u, bound)
	}

	// Reconcile is refused while the call may still be recorded.
	op := agentrt.Operator{Store: st, Now: func() time.Time { return res.CreatedAt }}
	figure := agentrt.Amount{Cost: 123, Tokens: 45}
	if _, err := op.ReconcileReservation(ctx, res.CallID, figure, "bob", "provider usage export"); !errors.Is(err, agentrt.ErrBudget) {
		t.Fatalf("reconcile within the expiry: %v, want ErrBudget", err)
	}
	if !res.Uncertain(res.ExpiresAt.Add(time.Nanosecond)) {
		t.Fatalf("a reserved reservation past its expiry is not uncertain")
	}
	op.Now = func() time.Time { return res.ExpiresAt.Add(time.Second) }
	done, err := op.ReconcileReservation(ctx, res.CallID, figure, "bob", "provider usage export")
	if err != nil || len(done) != 1 || done[0].Actual != figure {
		t.Fatalf("reconcile: %+v, %v", done, err)
	}
	if u := held(); u.Reserved != (agentrt.Amount{}) || u.Uncertain != (agentrt.Amount{}) || u.Settled != figure {
		t.Fatalf("after reconcile the window holds %+v, want exactly the figure %+v settled", u, figure)
	}
	evs := kit.EventsOf(t, st, "killed", agentrt.EventBudgetReconciled)
	if len(evs) != 1 || kit.Payload(t, evs[0])["by"] != "bob" {
		t.Fatalf("budget.reconciled events %v", evs)
	}
	if _, err := op.ReconcileReservation(ctx, res.CallID, figure, "bob", ""); !errors.Is(err, agentrt.ErrBudget) {
		t.Fatalf("a second reconcile: %v, want ErrBudget", err)
	}
	// The capacity is back.
	d2, _ := agentrt.NewDriver(agentrt.Config{EngineConfig: bkConfig(st, m, "parent"), Agent: &mcOnce{req: bkRequest}})
	run, err = d2.StartWithID(ctx, "after", "call the model", bkLimits())
	if err != nil {
		t.Fatal(err)
	}
	kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	rep, err := st.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("chain: %+v %v", rep.Break, err)
	}
}
