package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/sqlite"
)

// The real agentrt binary's demo runs with the disclosure module's default
// rules: its run's run.created event records their description, which
// names every secret rule in force.
func TestDemo_RunsWithTheDefaultDisclosureRules(t *testing.T) {
	bin := build(t, "agentrt", "cmd/agentrt")
	db := filepath.Join(t.TempDir(), "runs.db")
	out, err := exec.Command(bin, "-db", db, "demo", "-agent", "scripted").CombinedOutput()
	if err != nil {
		t.Fatalf("agentrt demo: %v\n%s", err, out)
	}
	st, err := sqlite.OpenExisting(db, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	runs, err := st.ListRuns(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	evs, err := st.ListEvents(ctx, runs[0].ID)
	if err != nil || len(evs) == 0 || evs[0].Type != agentrt.EventRunCreated {
		t.Fatalf("events %v, %v", evs, err)
	}
	p, err := agentrt.PayloadAs[agentrt.RunCreatedPayload](evs[0])
	if err != nil {
		t.Fatal(err)
	}
	rules, err := disclosure.New(disclosure.Default())
	if err != nil {
		t.Fatal(err)
	}
	want, err := agentrt.CanonicalJSON(rules.Describe())
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Disclosure) != string(want) || !strings.Contains(string(want), disclosure.RuleAWSAccessKeyID) {
		t.Fatalf("run.created records disclosure %s, want %s", p.Disclosure, want)
	}
}
