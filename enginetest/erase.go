package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// eraseRefused requires erasing runID to be refused with ErrRunState and
// an error naming each of want, leaving the run's events and goal as they
// were.
func eraseRefused(t *testing.T, op agentrt.Operator, st agentrt.Store, runID string, want ...string) {
	t.Helper()
	ctx := context.Background()
	before, err := st.ListEvents(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = op.Erase(ctx, runID, "dpo", "request 7")
	if !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("Erase = %v; want ErrRunState", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("Erase = %q; want it to name %q", err, w)
		}
	}
	after, err := st.ListEvents(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("a refused erasure left %d events, was %d", len(after), len(before))
	}
	for i := range after {
		if string(after[i].Payload) != string(before[i].Payload) {
			t.Fatalf("a refused erasure changed event %d: %s", after[i].Seq, after[i].Payload)
		}
	}
	if r := kit.MustRun(t, st, runID); r.Goal == "" {
		t.Fatalf("a refused erasure cleared the run's goal")
	}
}

// An operator cancels a run while its tool runs and erases it at once:
// erasure is refused, naming the step whose outcome is not recorded yet,
// and nothing is erased, up to the tool's timeout and a minute's grace.
// A tool that finishes has its late outcome appended and the erasure goes
// through after it in the chain; one whose process is gone never reports,
// and past its timeout and the grace the run is erased.
func caseErase_RefusesARunWhoseToolIsStillRunning(t *testing.T, bk *Backend) {
	ctx := context.Background()
	for _, reports := range []bool{true, false} {
		t.Run(map[bool]string{true: "the tool reports", false: "the tool never reports"}[reports], func(t *testing.T) {
			e := newEnv(t, bk)
			send, running, release := heldSend(func() (agentrt.ToolResult, error) {
				return agentrt.ToolResult{Content: json.RawMessage(`{"sent":1}`), Summary: "sent"}, nil
			})
			d := e.Driver(kit.Script(kit.Call("send", `{"path":"/a"}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), send)
			done := startAsync(d)
			<-running
			if _, err := e.Operator().Cancel(ctx, "run-1", "alice", "too slow"); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			st := kit.MustSteps(t, e.Store, "run-1")[0]
			eraseRefused(t, e.Operator(), e.Store, "run-1", st.ID, `"send"`, "outcome is not recorded")
			// The tool's timeout is a minute; the grace another.
			e.Clock.Advance(time.Minute + 59*time.Second)
			eraseRefused(t, e.Operator(), e.Store, "run-1", st.ID)
			if !reports {
				t.Cleanup(func() { close(release); <-done })
				e.Clock.Advance(2 * time.Second)
				if _, err := e.Operator().Erase(ctx, "run-1", "dpo", "request 7"); err != nil {
					t.Fatalf("Erase past the tool's timeout and the grace: %v", err)
				}
				verify(t, e.Store)
				return
			}
			close(release)
			awaitCancelled(t, e, done)
			late := kit.EventsOf(t, e.Store, "run-1", kit.ToolFinished)
			if len(late) != 1 || !strings.Contains(string(late[0].Payload), `"late":true`) {
				t.Fatalf("tool_finished events = %v; want the late outcome", late)
			}
			er, err := e.Operator().Erase(ctx, "run-1", "dpo", "request 7")
			if err != nil {
				t.Fatalf("Erase after the late outcome: %v", err)
			}
			if er.Seq <= late[0].Seq {
				t.Fatalf("run.erased at %d, before the late outcome at %d", er.Seq, late[0].Seq)
			}
			verify(t, e.Store)
		})
	}
}

// A run whose model call was cut off after it may have been sent holds an
// uncertain reservation: erasing it is refused, naming the call and
// telling the operator to reconcile it, and nothing is erased; once it is
// reconciled the run is erased and the budget holds nothing for it.
func caseErase_RefusesARunHoldingAnUnsettledReservation(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st := openStore(t, bk)
	c := &clock{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	op := agentrt.Operator{Store: st, Now: c.Now}
	bound := budgetBound()
	b, err := op.AddBudget(ctx, agentrt.NewBudget{Name: "acme", Scope: "tenant=acme", Window: agentrt.WindowNone, MaxCost: 2 * bound.Cost, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := budgetRun(t, st, &budgetModel{cut: true}, c.Now, nil, "cut"); r.Status != agentrt.RunFailed {
		t.Fatalf("cut run: %s", r.Status)
	}
	rs, err := st.(agentrt.BudgetReader).ListReservations(ctx, agentrt.ReservationFilter{RunID: "cut"}, 10)
	if err != nil || len(rs) != 1 || rs[0].Status != agentrt.ReservationUncertain {
		t.Fatalf("reservations %+v, %v; want one uncertain", rs, err)
	}
	eraseRefused(t, op, st, "cut", rs[0].CallID, "uncertain", "reconcile")
	if _, err := op.ReconcileReservation(ctx, rs[0].CallID, agentrt.Amount{Cost: 5, Tokens: 7}, "bob", "usage export"); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Erase(ctx, "cut", "dpo", "request 7"); err != nil {
		t.Fatalf("Erase after reconciling: %v", err)
	}
	if ws := window(t, st, b); ws[0].Uncertain != (agentrt.Amount{}) || ws[0].Reserved != (agentrt.Amount{}) {
		t.Fatalf("the budget still holds capacity for the erased run: %+v", ws)
	}
	verify(t, st)
}
