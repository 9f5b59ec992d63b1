package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// quorumRun pauses run "pay" on a payment that needs two of finance and
// returns a driver that resumes it, the tool, and the approval.
func quorumRun(t *testing.T, path string) (*agentrt.Driver, *kit.Counted, agentrt.Approval) {
	t.Helper()
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pay := kit.NewTool("pay", agentrt.RemoteMutation, `{"type":"object"}`, nil)
	pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "payment", Reason: "over the limit",
		Requirement: &agentrt.Requirement{Stages: []agentrt.Stage{{Quantifier: agentrt.QuantMofN, M: 2, Roles: []string{"finance"}}}}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Tools: kit.Tools(pay), Policy: kit.Fixed(pd)},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("pay", `{"eur":25000}`, "pay"), scripted.Complete(`{}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := d.StartWithID(context.Background(), "pay", "pay the invoice", agentrt.DefaultLimits()); err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("start: %s %v", r.Status, err)
	}
	return d, pay, kit.PendingApproval(t, st, "pay")
}

// The real binary: three keys enrolled with approvers add -role (alice
// and bob in finance, dave in ops); dave's approve is refused with one
// sentence; alice's is a vote that leaves the payment pending and show
// prints the stage with bob left to vote; alice again is refused; bob's
// grants; verify -decisions checks both votes; the resume pays once.
func TestQuorum_TheRealBinaryVotesTwoOfFinance(t *testing.T) {
	bin := buildAgentrt(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	d, pay, a := quorumRun(t, db)
	run := func(want int, args ...string) string {
		t.Helper()
		r := runBinary(t, bin, nil, append([]string{"-db", db}, args...)...)
		out := r.stdout + r.stderr
		if r.code != want {
			t.Fatalf("agentrt %s = exit %d, want %d\n%s", strings.Join(args, " "), r.code, want, out)
		}
		return out
	}
	for name, role := range map[string]string{"alice": "finance", "bob": "finance", "dave": "ops"} {
		key := filepath.Join(dir, name+".key")
		run(0, "approvers", "keygen", "-out", key)
		run(0, "approvers", "add", name, "-key", key+".pub", "-role", role, "-by", "admin")
	}
	if out := run(0, "approvers", "list"); !strings.Contains(out, "roles finance") || !strings.Contains(out, "roles ops") {
		t.Fatalf("approvers list does not show roles:\n%s", out)
	}
	approve := func(who string, want int) string {
		return run(want, "approve", "pay", "-approval", a.ID, "-key", filepath.Join(dir, who+".key"))
	}
	if out := approve("dave", 1); !strings.Contains(out, `approver "dave" may not vote`) || !strings.Contains(out, "nothing was recorded") {
		t.Fatalf("dave's approve:\n%s", out)
	}
	if out := approve("alice", 0); !strings.Contains(out, "vote recorded") || !strings.Contains(out, "1 of 2 (alice); may still vote: bob") {
		t.Fatalf("alice's approve:\n%s", out)
	}
	if out := run(0, "show", "pay"); !strings.Contains(out, "stage 1       2 of role finance: 1 of 2 (alice); may still vote: bob") {
		t.Fatalf("show after one vote:\n%s", out)
	}
	if out := approve("alice", 1); !strings.Contains(out, "counts once") {
		t.Fatalf("alice's second approve:\n%s", out)
	}
	if out := approve("bob", 0); !strings.Contains(out, "approved by bob") {
		t.Fatalf("bob's approve:\n%s", out)
	}
	var rep struct {
		Decisions struct{ Votes, Signed int64 } `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(run(0, "-json", "verify", "-decisions")), &rep); err != nil || rep.Decisions.Votes != 2 || rep.Decisions.Signed != 1 {
		t.Fatalf("verify -decisions: %+v %v", rep, err)
	}
	if out := run(0, "verify", "-decisions"); !strings.Contains(out, "votes: 2 verified on 1 approval(s); 1 approval(s) granted by votes") {
		t.Fatalf("verify -decisions text does not count the votes:\n%s", out)
	}
	if r, err := d.Resume(context.Background(), "pay"); err != nil || r.Status != agentrt.RunCompleted || pay.N() != 1 {
		t.Fatalf("resume: %s %v, %d payments", r.Status, err, pay.N())
	}
}
