// Package storetest is the behavioural suite every agentrt.Store backend
// runs: compare-and-set transitions, savepoint isolation, the event chain and
// bounded page reads. A backend's test calls Exercise with an opener.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Opener opens a fresh, empty store. The suite closes it.
type Opener func(t *testing.T) agentrt.Store

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Exercise runs the suite.
func Exercise(t *testing.T, open Opener) {
	t.Run("RunInsertAndGet", func(t *testing.T) { runInsertAndGet(t, open(t)) })
	t.Run("RunUpdateIsCompareAndSet", func(t *testing.T) { runUpdateCAS(t, open(t)) })
	t.Run("StepUpdateIsCompareAndSet", func(t *testing.T) { stepUpdateCAS(t, open(t)) })
	t.Run("ApprovalDecideBindsTheHash", func(t *testing.T) { approvalDecide(t, open(t)) })
	t.Run("FailedUpdateWritesNothing", func(t *testing.T) { failedUpdate(t, open(t)) })
	t.Run("ConcurrentUpdatesAreIsolated", func(t *testing.T) { concurrentIsolation(t, open(t)) })
	t.Run("ChainVerifies", func(t *testing.T) { chainVerifies(t, open(t)) })
	t.Run("TotalsSaturate", func(t *testing.T) { totalsSaturate(t, open(t)) })
	t.Run("PagesAreBounded", func(t *testing.T) { pagesBounded(t, open(t)) })
	t.Run("EventsAfterAreInCommitOrderAndBounded", func(t *testing.T) { eventsAfter(t, open(t)) })
	t.Run("StepEventsAreOneStepsInCommitOrder", func(t *testing.T) { stepEvents(t, open(t)) })
	t.Run("StepsByRequestKeyAreNewestFirst", func(t *testing.T) { requestKeys(t, open(t)) })
	t.Run("StepsEventsAreTheNamedStepsOfOneTypeInCommitOrder", func(t *testing.T) { stepsEvents(t, open(t)) })
	t.Run("RunsByStatusPage", func(t *testing.T) { runsByStatus(t, open(t)) })
	t.Run("ModelCalls", func(t *testing.T) { modelCalls(t, open(t)) })
	t.Run("LeaseRenewalIsCompareAndSet", func(t *testing.T) { leaseRenewal(t, open(t)) })
	t.Run("ApproversAndInvitations", func(t *testing.T) { approvers(t, open(t)) })
	t.Run("WaitingApprovalsPageOldestFirst", func(t *testing.T) { waitingApprovals(t, open(t)) })
	t.Run("RunClaimTakesRunnableWorkOldestFirst", func(t *testing.T) { runClaim(t, open(t)) })
	t.Run("RunClaimSkipsMoreRunsThanTheDatabaseTakesPlaceholders", func(t *testing.T) { runClaimSkipsMany(t, open(t)) })
	t.Run("BudgetsReserveWithinTheirCeilings", func(t *testing.T) { budgets(t, open(t)) })
}

func update(t *testing.T, s agentrt.Store, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	t.Helper()
	return s.Update(context.Background(), fn)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newRun(id string) agentrt.Run {
	return agentrt.Run{ID: id, Goal: "goal " + id, Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(),
		CreatedAt: t0, StartedAt: t0, LeaseOwner: "owner-a", LeaseExpiresAt: t0.Add(time.Minute), Generation: 1}
}

func insertRun(t *testing.T, s agentrt.Store, id string) {
	t.Helper()
	_, err := update(t, s, func(tx agentrt.Tx) error {
		if err := tx.RunInsert(newRun(id)); err != nil {
			return err
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: id, At: t0, Type: agentrt.EventRunCreated, Payload: json.RawMessage(`{"goal":"x"}`)})
		return err
	})
	must(t, err)
}

func runInsertAndGet(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	r, err := s.GetRun(ctx, "r1")
	must(t, err)
	want := newRun("r1")
	if r.ID != want.ID || r.Goal != want.Goal || r.Status != want.Status || r.Limits != want.Limits ||
		!r.CreatedAt.Equal(t0) || r.LeaseOwner != "owner-a" || r.Generation != 1 || r.DecodeError != "" {
		t.Fatalf("GetRun = %+v, want %+v", r, want)
	}
	if _, err := s.GetRun(ctx, "nope"); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("GetRun(nope) = %v, want ErrNotFound", err)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error { return tx.RunInsert(newRun("r1")) })
	if !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("second insert of r1 = %v, want ErrRunState", err)
	}
	runs, err := s.ListRuns(ctx)
	must(t, err)
	if len(runs) != 1 {
		t.Fatalf("ListRuns = %d runs, want 1", len(runs))
	}
}

func runUpdateCAS(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	cases := []struct {
		name string
		u    agentrt.RunUpdate
	}{
		{"wrong status", agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunWaiting}, Status: agentrt.RunFailed}},
		{"wrong owner", agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunRunning}, CheckLease: true, Owner: "owner-b", Generation: 1, Status: agentrt.RunFailed}},
		{"stale generation", agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunRunning}, CheckLease: true, Owner: "owner-a", Generation: 0, Status: agentrt.RunFailed}},
		{"wrong step count", agentrt.RunUpdate{ID: "r1", CheckStepCount: true, StepCount: 5, IncStepCount: true}},
		{"unknown run", agentrt.RunUpdate{ID: "r2", Status: agentrt.RunFailed}},
	}
	for _, c := range cases {
		_, err := update(t, s, func(tx agentrt.Tx) error { return tx.RunUpdate(c.u) })
		if !errors.Is(err, agentrt.ErrRunState) {
			t.Errorf("%s: err = %v, want ErrRunState", c.name, err)
		}
	}
	r, err := s.GetRun(ctx, "r1")
	must(t, err)
	if r.Status != agentrt.RunRunning || r.StepCount != 0 {
		t.Fatalf("refused updates changed the run: %+v", r)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		return tx.RunUpdate(agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunRunning}, CheckLease: true,
			Owner: "owner-a", Generation: 1, CheckStepCount: true, StepCount: 0, IncStepCount: true, BumpGeneration: true,
			AddActive: time.Second, Status: agentrt.RunWaiting, SetLease: true})
	})
	must(t, err)
	r, err = s.GetRun(ctx, "r1")
	must(t, err)
	if r.Status != agentrt.RunWaiting || r.StepCount != 1 || r.Generation != 2 || r.ActiveTime != time.Second || r.LeaseOwner != "" || !r.LeaseExpiresAt.IsZero() {
		t.Fatalf("after update: %+v", r)
	}
}

func stepUpdateCAS(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	st := agentrt.Step{ID: "s1", RunID: "r1", Index: 0, Status: agentrt.StepDeciding, StartedAt: t0}
	_, err := update(t, s, func(tx agentrt.Tx) error { return tx.StepInsert(st) })
	must(t, err)
	_, err = update(t, s, func(tx agentrt.Tx) error {
		return tx.StepInsert(agentrt.Step{ID: "s2", RunID: "r1", Index: 0, Status: agentrt.StepDeciding, StartedAt: t0})
	})
	if !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a second step with index 0 = %v, want ErrRunState", err)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		return tx.StepUpdate(agentrt.StepUpdate{ID: "s1", From: []agentrt.StepStatus{agentrt.StepExecuting}, Status: agentrt.StepDone})
	})
	if !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("step update from the wrong status = %v, want ErrRunState", err)
	}
	dec := &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "t", Args: json.RawMessage(`{"a":1}`), Reason: "because"}
	obs := &agentrt.Observation{Kind: agentrt.ObsToolResult, Content: json.RawMessage(`{"ok":true}`), Summary: "ok"}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		return tx.StepUpdate(agentrt.StepUpdate{ID: "s1", From: []agentrt.StepStatus{agentrt.StepDeciding}, Status: agentrt.StepDone,
			Decision: dec, Observation: obs, FinishedAt: t0.Add(time.Second), SpecHash: "abc"})
	})
	must(t, err)
	steps, err := s.ListSteps(ctx, "r1")
	must(t, err)
	if len(steps) != 1 || steps[0].Status != agentrt.StepDone || steps[0].Decision == nil || steps[0].Decision.Reason != "because" ||
		string(steps[0].Decision.Args) != `{"a":1}` || steps[0].Observation == nil || steps[0].SpecHash != "abc" || steps[0].DecodeError != "" {
		t.Fatalf("ListSteps = %+v", steps)
	}
}

func approvalDecide(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	a := agentrt.Approval{ID: "a1", RunID: "r1", StepID: "s1", Kind: "k", Capability: json.RawMessage(`{}`),
		Presentation: json.RawMessage(`{"p":1}`), Request: agentrt.ToolRequest{RunID: "r1", StepID: "s1", Args: json.RawMessage(`{}`)},
		Hash: "h1", Status: agentrt.ApprovalPending, CreatedAt: t0}
	_, err := update(t, s, func(tx agentrt.Tx) error { return tx.ApprovalInsert(a) })
	must(t, err)
	decide := func(hash string) error {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			return tx.ApprovalDecide(agentrt.ApprovalDecide{ID: "a1", RunID: "r1", From: agentrt.ApprovalPending, Hash: hash,
				Status: agentrt.ApprovalApproved, DecidedAt: t0, DecidedBy: "op"})
		})
		return err
	}
	if err := decide("other"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("decide with another hash = %v, want ErrRunState", err)
	}
	got, err := s.GetApproval(ctx, "r1", "a1")
	must(t, err)
	if got.Status != agentrt.ApprovalPending {
		t.Fatalf("refused decision changed the approval: %+v", got)
	}
	must(t, decide("h1"))
	if err := decide("h1"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("second decision = %v, want ErrRunState", err)
	}
	got, err = s.GetApproval(ctx, "r1", "a1")
	must(t, err)
	if got.Status != agentrt.ApprovalApproved || got.DecidedBy != "op" || string(got.Presentation) != `{"p":1}` {
		t.Fatalf("approval = %+v", got)
	}
	if _, err := s.GetApproval(ctx, "r2", "a1"); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("another run's approval = %v, want ErrNotFound", err)
	}
}

func failedUpdate(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	boom := errors.New("boom")
	evs, err := update(t, s, func(tx agentrt.Tx) error {
		if _, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: t0, Type: agentrt.EventStepStarted}); err != nil {
			return err
		}
		if err := tx.StepInsert(agentrt.Step{ID: "s1", RunID: "r1", Status: agentrt.StepDeciding, StartedAt: t0}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || evs != nil {
		t.Fatalf("Update = %v, %v; want boom and no events", evs, err)
	}
	steps, _ := s.ListSteps(ctx, "r1")
	events, _ := s.ListEvents(ctx, "r1")
	if len(steps) != 0 || len(events) != 1 {
		t.Fatalf("a failed update left %d steps and %d events", len(steps), len(events))
	}
	// The chain continues from the last committed event.
	insertRun(t, s, "r2")
	rep, err := s.VerifyEvents(ctx, 0, 0)
	must(t, err)
	if !rep.Intact() || rep.Checked != 2 {
		t.Fatalf("verify after a rollback = %+v", rep)
	}
}

func concurrentIsolation(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	const n = 16
	for i := 0; i < n; i++ {
		insertRun(t, s, fmt.Sprintf("r%d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("r%d", i)
			_, errs[i] = s.Update(ctx, func(tx agentrt.Tx) error {
				if _, err := tx.EventAppend(agentrt.Event{RunID: id, At: t0, Type: agentrt.EventRunFinished}); err != nil {
					return err
				}
				status := agentrt.RunRunning
				if i%2 == 1 {
					status = agentrt.RunWaiting // a failing compare-and-set
				}
				return tx.RunUpdate(agentrt.RunUpdate{ID: id, From: []agentrt.RunStatus{status}, Status: agentrt.RunCompleted})
			})
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		r, err := s.GetRun(ctx, fmt.Sprintf("r%d", i))
		must(t, err)
		evs, _ := s.ListEvents(ctx, r.ID)
		if i%2 == 0 {
			if errs[i] != nil || r.Status != agentrt.RunCompleted || len(evs) != 2 {
				t.Errorf("run %d: err %v, status %s, %d events; want committed", i, errs[i], r.Status, len(evs))
			}
		} else if !errors.Is(errs[i], agentrt.ErrRunState) || r.Status != agentrt.RunRunning || len(evs) != 1 {
			t.Errorf("run %d: err %v, status %s, %d events; want only its own writes rolled back", i, errs[i], r.Status, len(evs))
		}
	}
	rep, err := s.VerifyEvents(ctx, 0, 0)
	must(t, err)
	if !rep.Intact() || rep.Checked != int64(n+n/2) {
		t.Fatalf("chain after concurrent updates: %+v", rep)
	}
}

func chainVerifies(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	for i := 0; i < 20; i++ {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: "r1", StepID: "s", At: t0.Add(time.Duration(i)), Type: agentrt.EventStepStarted,
				Payload: json.RawMessage(fmt.Sprintf(`{"index":%d}`, i))})
			return err
		})
		must(t, err)
	}
	// A payload over MaxPageText is hashed in chunks by the verifier.
	big := `{"v":"` + strings.Repeat("b", 3*agentrt.MaxPageText+17) + `"}`
	_, err := update(t, s, func(tx agentrt.Tx) error {
		_, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: t0, Type: agentrt.EventToolFinished, Payload: json.RawMessage(big)})
		return err
	})
	must(t, err)
	rep, err := s.VerifyEvents(ctx, 0, 0)
	must(t, err)
	seq, head, err := s.ChainHead(ctx)
	must(t, err)
	if !rep.Intact() || rep.Checked != 22 || rep.To != 22 || seq != 22 || rep.Hash != head {
		t.Fatalf("verify = %+v, head = %d %s", rep, seq, head)
	}
	h10, err := s.EventHash(ctx, 10)
	must(t, err)
	part, err := s.VerifyEvents(ctx, 11, 15)
	must(t, err)
	if !part.Intact() || part.Checked != 5 || part.From != 11 || part.To != 15 {
		t.Fatalf("partial verify = %+v", part)
	}
	if h10 == "" || h10 == head {
		t.Fatalf("EventHash(10) = %q", h10)
	}
	if _, err := s.EventHash(ctx, 999); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("EventHash(999) = %v, want ErrNotFound", err)
	}
}

func totalsSaturate(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	huge := agentrt.Usage{InputTokens: 1<<63 - 10, OutputTokens: 1<<63 - 10, CachedInputTokens: 1}
	for i := 0; i < 2; i++ {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			return tx.RunUpdate(agentrt.RunUpdate{ID: "r1", AddUsage: huge, AddCost: 1<<63 - 10, AddCalls: 1})
		})
		must(t, err)
	}
	r, err := s.GetRun(ctx, "r1")
	must(t, err)
	const max = 1<<63 - 1
	if r.Usage.InputTokens != max || r.Usage.OutputTokens != max || r.EstimatedCost != max || r.ModelCalls != 2 || r.Usage.CachedInputTokens != 2 {
		t.Fatalf("totals did not saturate: %+v", r)
	}
}

func pagesBounded(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		insertRun(t, s, fmt.Sprintf("r%d", i))
	}
	big := strings.Repeat("x", agentrt.MaxPageText+1000)
	_, err := update(t, s, func(tx agentrt.Tx) error {
		r := newRun("big")
		r.Goal = big
		r.Result = json.RawMessage(`{"v":"` + big + `"}`)
		if err := tx.RunInsert(r); err != nil {
			return err
		}
		if err := tx.StepInsert(agentrt.Step{ID: "s1", RunID: "big", Status: agentrt.StepDone, StartedAt: t0,
			Decision: &agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "t", Args: json.RawMessage(`{"v":"` + big + `"}`)}}); err != nil {
			return err
		}
		_, err := tx.EventAppend(agentrt.Event{RunID: "big", At: t0, Type: agentrt.EventStepDecided, Payload: json.RawMessage(`{"v":"` + big + `"}`)})
		return err
	})
	must(t, err)
	runs, total, err := s.ListRunsPage(ctx, 2, 1)
	must(t, err)
	if total != 6 || len(runs) != 2 || runs[0].ID != "r4" || runs[1].ID != "r3" {
		t.Fatalf("runs page = %d of %d: %v", len(runs), total, runIDs(runs))
	}
	r, err := s.GetRunCapped(ctx, "big")
	must(t, err)
	if len(r.Goal) > agentrt.MaxPageText+100 || !strings.Contains(r.Goal, "truncated") {
		t.Fatalf("capped goal is %d bytes", len(r.Goal))
	}
	if len(r.Result) > agentrt.MaxPageText || !json.Valid(r.Result) || !strings.Contains(string(r.Result), `"truncated":true`) {
		t.Fatalf("capped result = %.200s", r.Result)
	}
	steps, total, err := s.ListStepsPage(ctx, "big", 10, 0)
	must(t, err)
	if total != 1 || len(steps) != 1 || steps[0].Decision == nil || steps[0].Decision.Tool != "t" || !strings.Contains(steps[0].DecodeError, "not read whole") {
		t.Fatalf("steps page = %+v", steps)
	}
	evs, total, err := s.ListEventsPage(ctx, "big", 10, 0)
	must(t, err)
	if total != 1 || len(evs) != 1 || len(evs[0].Payload) > agentrt.MaxPageText || !json.Valid(evs[0].Payload) {
		t.Fatalf("events page = %d of %d, payload %d bytes", len(evs), total, len(evs[0].Payload))
	}
	if _, _, err := s.ListRunsPage(ctx, 0, 0); err == nil {
		t.Fatal("a page of limit 0 was accepted")
	}
	if _, _, err := s.ListEventsPage(ctx, "", 1, -1); err == nil {
		t.Fatal("a negative offset was accepted")
	}
}

func runIDs(rs []agentrt.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func modelCalls(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	_, err := update(t, s, func(tx agentrt.Tx) error {
		return tx.ModelCallInsert(agentrt.ModelCall{ID: "c1", RunID: "r1", StepID: "s1", Attempt: 1, Status: agentrt.ModelDispatched, Model: "m", DispatchedAt: t0})
	})
	must(t, err)
	fin := agentrt.ModelCallFinish{ID: "c1", Status: agentrt.ModelOK, Usage: agentrt.Usage{InputTokens: 10, OutputTokens: 5}, Cost: 7, Latency: time.Second, CompletedAt: t0.Add(time.Second)}
	_, err = update(t, s, func(tx agentrt.Tx) error { return tx.ModelCallFinish(fin) })
	must(t, err)
	_, err = update(t, s, func(tx agentrt.Tx) error { return tx.ModelCallFinish(fin) })
	if !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("finishing twice = %v, want ErrRunState", err)
	}
	calls, err := s.ListModelCalls(ctx, "r1")
	must(t, err)
	if len(calls) != 1 || calls[0].Status != agentrt.ModelOK || calls[0].Usage.InputTokens != 10 || calls[0].Cost != 7 || calls[0].Latency != time.Second {
		t.Fatalf("model calls = %+v", calls)
	}
}

func leaseRenewal(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	later := t0.Add(time.Hour)
	renew := func(owner string, gen int64) error {
		return s.RenewLease(ctx, agentrt.LeaseRenewal{RunID: "r1", Owner: owner, Generation: gen, ExpiresAt: later, TTL: time.Hour})
	}
	if err := renew("owner-b", 1); !errors.Is(err, agentrt.ErrLeaseLost) {
		t.Fatalf("renewal by another owner = %v, want ErrLeaseLost", err)
	}
	if err := renew("owner-a", 2); !errors.Is(err, agentrt.ErrLeaseLost) {
		t.Fatalf("renewal at a stale generation = %v, want ErrLeaseLost", err)
	}
	lo, hi := dbWindow(t, s, func() { must(t, renew("owner-a", 1)) })
	r, err := s.GetRun(ctx, "r1")
	must(t, err)
	if lo.IsZero() {
		if !r.LeaseExpiresAt.Equal(later) {
			t.Fatalf("lease expiry = %s, want %s", r.LeaseExpiresAt, later)
		}
		return
	}
	// On the database's clock: its now plus the TTL, whatever ExpiresAt said.
	if r.LeaseExpiresAt.Before(lo.Add(time.Hour).Truncate(time.Microsecond)) || r.LeaseExpiresAt.After(hi.Add(time.Hour)) {
		t.Fatalf("lease expiry = %s, want the database's now plus an hour, within [%s, %s]", r.LeaseExpiresAt, lo.Add(time.Hour), hi.Add(time.Hour))
	}
}

// dbWindow runs fn between two readings of the store's database clock; both
// are zero for a store that has none.
func dbWindow(t *testing.T, s agentrt.Store, fn func()) (lo, hi time.Time) {
	t.Helper()
	c, ok := s.(agentrt.DatabaseClock)
	if !ok {
		fn()
		return time.Time{}, time.Time{}
	}
	ctx := context.Background()
	lo, err := c.DatabaseNow(ctx)
	must(t, err)
	fn()
	hi, err = c.DatabaseNow(ctx)
	must(t, err)
	return lo, hi
}

func runClaim(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	past, future := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	type row struct {
		id     string
		status agentrt.RunStatus
		owner  string
		exp    time.Time
		step   agentrt.StepStatus
		appr   agentrt.ApprovalStatus
	}
	rows := []row{
		{"enqueued", agentrt.RunEnqueued, "", time.Time{}, "", ""},
		{"live", agentrt.RunRunning, "owner-a", future, "", ""},
		{"lapsed", agentrt.RunRunning, "owner-a", past, agentrt.StepExecuting, ""},
		{"released", agentrt.RunRunning, "", time.Time{}, "", ""},
		{"approved", agentrt.RunWaiting, "", time.Time{}, agentrt.StepAwaitingApproval, agentrt.ApprovalApproved},
		{"pending", agentrt.RunWaiting, "", time.Time{}, agentrt.StepAwaitingApproval, agentrt.ApprovalPending},
		{"done", agentrt.RunCompleted, "", time.Time{}, "", ""},
		{"enqueued-claimed", agentrt.RunEnqueued, "owner-c", future, "", ""},
	}
	for _, r := range rows {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			run := newRun(r.id)
			run.Status, run.LeaseOwner, run.LeaseExpiresAt, run.Generation = r.status, r.owner, r.exp, 3
			if err := tx.RunInsert(run); err != nil {
				return err
			}
			if r.step != "" {
				if err := tx.StepInsert(agentrt.Step{ID: r.id + "-s", RunID: r.id, Status: r.step, StartedAt: t0}); err != nil {
					return err
				}
			}
			if r.appr != "" {
				return tx.ApprovalInsert(agentrt.Approval{ID: r.id + "-a", RunID: r.id, StepID: r.id + "-s", Kind: "k",
					Capability: json.RawMessage(`{}`), Presentation: json.RawMessage(`{}`), Hash: "h", Status: r.appr, CreatedAt: t0})
			}
			return nil
		})
		must(t, err)
	}
	claim := func(owner string, limit int, skip ...string) []string {
		var got []agentrt.Run
		_, err := update(t, s, func(tx agentrt.Tx) error {
			var err error
			got, err = tx.RunClaim(agentrt.RunClaim{Owner: owner, Limit: limit, Now: time.Now(), TTL: time.Minute, Skip: skip})
			return err
		})
		must(t, err)
		var ids []string
		for _, r := range got {
			if r.Generation != 3 {
				t.Errorf("claim returned %s at generation %d, want it as it was (3)", r.ID, r.Generation)
			}
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := claim("owner-b", 1, "enqueued", "nobody"); strings.Join(got, ",") != "lapsed" {
		t.Fatalf("a claim of 1 skipping enqueued = %v, want [lapsed]", got)
	}
	if got := claim("owner-b", 2); strings.Join(got, ",") != "enqueued,released" {
		t.Fatalf("second claim of 2 = %v, want the two oldest runnable runs left [enqueued released]", got)
	}
	if got := claim("owner-b", 10); strings.Join(got, ",") != "approved" {
		t.Fatalf("third claim = %v, want [approved]", got)
	}
	if got := claim("owner-d", 10); len(got) != 0 {
		t.Fatalf("a claim while owner-b holds them all = %v, want none", got)
	}
	for _, r := range rows {
		run, err := s.GetRun(ctx, r.id)
		must(t, err)
		claimed := r.id == "enqueued" || r.id == "lapsed" || r.id == "released" || r.id == "approved"
		switch {
		case claimed && (run.LeaseOwner != "owner-b" || run.Generation != 4 || run.Status != r.status || !run.LeaseExpiresAt.After(time.Now().Add(30*time.Second))):
			t.Errorf("claimed %s = owner %q generation %d status %s expires %s; want owner-b, 4, %s, a minute on", r.id, run.LeaseOwner, run.Generation, run.Status, run.LeaseExpiresAt, r.status)
		case !claimed && (run.LeaseOwner != r.owner || run.Generation != 3):
			t.Errorf("unclaimed %s changed: owner %q generation %d", r.id, run.LeaseOwner, run.Generation)
		}
	}
}
