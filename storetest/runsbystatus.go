package storetest

import (
	"context"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// runsByStatus checks the runs page of one status: only that status,
// newest first, its total counted alone, "" meaning every run, and a status
// that is not one refused.
func runsByStatus(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c", "d"} {
		insertRun(t, s, id)
	}
	for _, id := range []string{"b", "d"} {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			return tx.RunUpdate(agentrt.RunUpdate{ID: id, From: []agentrt.RunStatus{agentrt.RunRunning}, Status: agentrt.RunCompleted,
				Reason: agentrt.ReasonGoalCompleted, FinishedAt: t0})
		})
		must(t, err)
	}
	ids := func(rs []agentrt.Run) string {
		out := ""
		for _, r := range rs {
			out += r.ID
		}
		return out
	}
	done, total, err := s.ListRunsByStatusPage(ctx, agentrt.RunCompleted, 10, 0)
	must(t, err)
	if ids(done) != "db" || total != 2 {
		t.Fatalf("completed runs = %q of %d, want db of 2", ids(done), total)
	}
	for _, r := range done {
		if r.Status != agentrt.RunCompleted {
			t.Fatalf("run %s in the completed page is %s", r.ID, r.Status)
		}
	}
	page, total, err := s.ListRunsByStatusPage(ctx, agentrt.RunRunning, 1, 1)
	must(t, err)
	if ids(page) != "a" || total != 2 {
		t.Fatalf("running runs, second page of one = %q of %d, want a of 2", ids(page), total)
	}
	all, total, err := s.ListRunsByStatusPage(ctx, "", 10, 0)
	must(t, err)
	if ids(all) != "dcba" || total != 4 {
		t.Fatalf("every run = %q of %d, want dcba of 4", ids(all), total)
	}
	if _, _, err := s.ListRunsByStatusPage(ctx, "done", 10, 0); err == nil {
		t.Fatal("a status that is not a run status was accepted")
	}
}
