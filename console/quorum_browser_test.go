package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console/consoletest"
	"github.com/agentrt/agentrt/scripted"
)

// Two approvers, each in a browser of their own with a passkey, in
// finance: the note needs two of finance. Alice's page shows the stage
// with both left to vote; her signed vote says it was recorded, the
// approval stays pending and a resume writes nothing. Bob's page shows 1
// of 2 by alice; his vote grants it, and the resume writes the note once.
func TestBrowser_TwoApproversEachVoteWithAPasskey(t *testing.T) {
	ctx := context.Background()
	e := newConsoleEnv(t)
	pd := ask
	pd.Requirement = &agentrt.Requirement{Stages: []agentrt.Stage{{Quantifier: agentrt.QuantMofN, M: 2, Roles: []string{"finance"}}}}
	d := e.driver(pd, hostileCall("paid"), scripted.Complete(`{"ok":true}`))
	run := e.startWaiting(d, "pay the invoice")
	a := e.pendingOf(run.ID)
	page := e.origin + "/runs/" + run.ID + "/approvals/" + a.ID
	op := agentrt.Operator{Store: e.store}
	browsers := map[string]*consoletest.Browser{}
	for _, name := range []string{"alice", "bob"} {
		b := consoletest.NewBrowser(t)
		b.Enroll(t, e.invite(name))
		if _, err := op.SetApproverAccess(ctx, name, agentrt.ApproverAccess{Roles: []string{"finance"}}, "admin"); err != nil {
			t.Fatal(err)
		}
		browsers[name] = b
	}
	vote := func(name, wantStage, wantResult string) {
		t.Helper()
		b := browsers[name]
		b.Do(t, name+" opens the approval", chromedp.Navigate(page))
		b.WaitFor(t, name+"'s approval page", `document.querySelector("#approve") !== null && document.querySelector("#stages") !== null`)
		if got := consoletest.Eval[string](t, b, `document.querySelector("#stages .counted").textContent`); !strings.Contains(got, wantStage) {
			t.Fatalf("%s's page shows the stage as %q, want %q", name, got, wantStage)
		}
		b.Click(t, name+" votes", "#approve")
		b.WaitFor(t, name+"'s vote", `document.getElementById("result").className === "ok"`)
		if got := consoletest.Eval[string](t, b, `document.getElementById("result").textContent`); !strings.Contains(got, wantResult) {
			t.Fatalf("%s's result reads %q, want %q", name, got, wantResult)
		}
		b.NoViolations(t)
	}
	vote("alice", "0 of 2", "Vote recorded and signed by alice")
	if got, _ := e.store.GetApproval(ctx, run.ID, a.ID); got.Status != agentrt.ApprovalPending {
		t.Fatalf("after one vote the approval is %s", got.Status)
	}
	if _, err := d.Resume(ctx, run.ID); err == nil || e.called("paid") != 0 {
		t.Fatalf("Resume after one vote = %v, %d writes", err, e.called("paid"))
	}
	vote("bob", "1 of 2 alice", "Approved and signed by bob")
	if r, err := d.Resume(ctx, run.ID); err != nil || r.Status != agentrt.RunCompleted || e.called("paid") != 1 {
		t.Fatalf("Resume after two votes = %s, %v, %d writes", r.Status, err, e.called("paid"))
	}
}
