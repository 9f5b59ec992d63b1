package enginetest

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// twoOfFinance is a payment that needs two of finance, the run's
// requester excluded.
func twoOfFinance() agentrt.PolicyDecision {
	return agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "payment", Reason: "a payment over the limit",
		Requirement: &agentrt.Requirement{Stages: []agentrt.Stage{{Quantifier: agentrt.QuantMofN, M: 2,
			Roles: []string{"finance"}, Exclude: []string{agentrt.ExcludeRequester}}}}}
}

// quorumEnv is run-1 paused on a payment, with alice, bob and carol in
// finance, dave in ops, and erin in finance but the run's requester.
type quorumEnv struct {
	*env
	send  *kit.Counted
	a     agentrt.Approval
	aps   map[string]agentrt.EnrolledApprover
	keys  map[string]ed25519.PrivateKey
	limit agentrt.Limits
}

func newQuorumEnv(t *testing.T, bk *Backend, pd agentrt.PolicyDecision, edit func(*agentrt.Limits)) *quorumEnv {
	t.Helper()
	e := newEnv(t, bk)
	q := &quorumEnv{env: e, aps: map[string]agentrt.EnrolledApprover{}, keys: map[string]ed25519.PrivateKey{}}
	for name, role := range map[string]string{"alice": "finance", "bob": "finance", "carol": "finance", "dave": "ops", "erin": "finance"} {
		_, key := keyApprover(t, e.Operator(), name)
		ap, err := e.Operator().SetApproverAccess(context.Background(), name, agentrt.ApproverAccess{Roles: []string{role}}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		q.aps[name], q.keys[name] = ap, key
	}
	q.limit = kit.Limits(func(l *agentrt.Limits) {
		l.Labels = "requester=erin"
		if edit != nil {
			edit(l)
		}
	})
	q.send, q.a = pausedWith(t, e, pd, q.limit)
	return q
}

// vote decides q's approval as name, signed with name's key.
func (q *quorumEnv) vote(t *testing.T, name string, approve bool) error {
	t.Helper()
	verb := agentrt.StatementReject
	if !approve {
		return q.Operator().RejectShown(context.Background(), "run-1", q.a.ID, q.a.Hash, "", "no",
			agentrt.WithSignature(sign(t, q.keys[name], q.aps[name], statement(q.env, q.a, verb, "no"))))
	}
	verb = agentrt.StatementApprove
	return q.Operator().ApproveShown(context.Background(), "run-1", q.a.ID, q.a.Hash, "", "ok",
		agentrt.WithSignature(sign(t, q.keys[name], q.aps[name], statement(q.env, q.a, verb, "ok"))))
}

// driver resumes run-1 with the same policy and tool.
func (q *quorumEnv) driver(pd agentrt.PolicyDecision) *agentrt.Driver {
	return q.Driver(kit.Script(kit.Call("send", `{"path":"/report"}`), kit.Complete(`{}`)), kit.Fixed(pd), q.send)
}

// refusedUnchanged requires err to match want and the database to be
// exactly as before.
func (q *quorumEnv) refusedUnchanged(t *testing.T, what string, err, want error, before snapshot) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v; want %v", what, err, want)
	}
	q.db.requireUnchanged(t, before, what)
}

// A 2-of-3 finance stage: the requester's vote and an ops approver's are
// refused and change nothing; alice's vote is recorded and executes
// nothing; alice again is refused; bob's grants; the resume executes the
// request once, and a second resume does not execute it again.
func caseQuorum_TwoOfThreeExecutesOnceAfterTheSecondVote(t *testing.T, bk *Backend) {
	ctx := context.Background()
	pd := twoOfFinance()
	q := newQuorumEnv(t, bk, pd, nil)
	plain, _ := agentrt.ApprovalHash(q.a.Kind, q.a.Capability, q.a.Presentation, q.a.Request)
	if q.a.Requirement == nil || q.a.Hash == plain {
		t.Fatalf("the approval does not bind its requirement: %+v", q.a.Requirement)
	}
	for _, who := range []string{"erin", "dave"} {
		before := q.db.snapshot(t)
		q.refusedUnchanged(t, who+"'s vote", q.vote(t, who, true), agentrt.ErrOutOfScope, before)
	}
	if err := q.vote(t, "alice", true); err != nil {
		t.Fatalf("alice's vote: %v", err)
	}
	if got := kit.PendingApproval(t, q.Store, "run-1"); got.ID != q.a.ID {
		t.Fatalf("after one vote the pending approval is %s", got.ID)
	}
	d := q.driver(pd)
	if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunState) || q.send.N() != 0 {
		t.Fatalf("Resume after one vote = %v, %d sends; want ErrRunState and none", err, q.send.N())
	}
	before := q.db.snapshot(t)
	q.refusedUnchanged(t, "alice's second vote", q.vote(t, "alice", true), agentrt.ErrAlreadyVoted, before)
	if err := q.vote(t, "bob", true); err != nil {
		t.Fatalf("bob's vote: %v", err)
	}
	if n := len(kit.EventsOf(t, q.Store, "run-1", agentrt.EventApprovalVoted)); n != 2 {
		t.Fatalf("%d approval.voted events, want 2", n)
	}
	resumeCompletes(t, d, "run-1")
	if _, err := d.Resume(ctx, "run-1"); err == nil || q.send.N() != 1 {
		t.Fatalf("a second Resume = %v with %d sends; want a refusal and one send", err, q.send.N())
	}
	if err := q.vote(t, "carol", true); !errors.Is(err, agentrt.ErrNotPending) {
		t.Fatalf("carol's vote after the grant = %v; want ErrNotPending", err)
	}
}

// Two stages (any of finance, then any of ciso): a ciso vote before the
// first stage is met, and a finance vote after it, are refused as
// ErrStageClosed and change nothing.
func caseQuorum_VoteOutsideTheOpenStageIsRefused(t *testing.T, bk *Backend) {
	pd := twoOfFinance()
	pd.Requirement = &agentrt.Requirement{Stages: []agentrt.Stage{
		{Quantifier: agentrt.QuantAny, Roles: []string{"finance"}},
		{Quantifier: agentrt.QuantAll, Approvers: []string{"dave"}}}}
	q := newQuorumEnv(t, bk, pd, nil)
	before := q.db.snapshot(t)
	q.refusedUnchanged(t, "dave before stage 1 is met", q.vote(t, "dave", true), agentrt.ErrStageClosed, before)
	if err := q.vote(t, "alice", true); err != nil {
		t.Fatal(err)
	}
	before = q.db.snapshot(t)
	q.refusedUnchanged(t, "bob after stage 1 closed", q.vote(t, "bob", true), agentrt.ErrStageClosed, before)
	if err := q.vote(t, "dave", true); err != nil {
		t.Fatal(err)
	}
	resumeCompletes(t, q.driver(pd), "run-1")
}

// A deny by an approver in scope ends the approval and cancels the run,
// after one approving vote; an ops approver's deny is refused first.
func caseQuorum_DenyByAnyoneInScopeEndsIt(t *testing.T, bk *Backend) {
	q := newQuorumEnv(t, bk, twoOfFinance(), nil)
	if err := q.vote(t, "alice", true); err != nil {
		t.Fatal(err)
	}
	before := q.db.snapshot(t)
	q.refusedUnchanged(t, "dave's deny", q.vote(t, "dave", false), agentrt.ErrOutOfScope, before)
	if err := q.vote(t, "bob", false); err != nil {
		t.Fatalf("bob's deny: %v", err)
	}
	run, err := q.Store.GetRun(context.Background(), "run-1")
	if err != nil || run.Status != agentrt.RunCancelled || run.Reason != agentrt.ReasonApprovalRejected {
		t.Fatalf("after a deny the run is %s %s, %v", run.Status, run.Reason, err)
	}
	if err := q.vote(t, "carol", true); !errors.Is(err, agentrt.ErrNotPending) || q.send.N() != 0 {
		t.Fatalf("a vote after the deny = %v, %d sends", err, q.send.N())
	}
}

// An approver removed between two votes counts for nothing: removed after
// voting, bob's vote does not complete the stage, and carol's does; and
// once granted, removing a voter before the resume makes the grant
// execute nothing, its rows unchanged.
func caseQuorum_RemovedApproverNoLongerCounts(t *testing.T, bk *Backend) {
	ctx := context.Background()
	q := newQuorumEnv(t, bk, twoOfFinance(), nil)
	if err := q.vote(t, "alice", true); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Operator().RemoveApprover(ctx, "alice", "admin"); err != nil {
		t.Fatal(err)
	}
	if err := q.vote(t, "bob", true); err != nil {
		t.Fatal(err)
	}
	if a := kit.PendingApproval(t, q.Store, "run-1"); a.ID != q.a.ID {
		t.Fatal("the approval was granted by a removed approver's vote")
	}
	if err := q.vote(t, "carol", true); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Operator().RemoveApprover(ctx, "carol", "admin"); err != nil {
		t.Fatal(err)
	}
	before := q.db.snapshot(t)
	_, err := q.driver(twoOfFinance()).Resume(ctx, "run-1")
	q.refusedUnchanged(t, "Resume after carol's removal", err, agentrt.ErrQuorumNotMet, before)
	if q.send.N() != 0 {
		t.Fatal("the grant executed")
	}
}

// The policy's requirement changes while the approval waits: the votes
// granted the old approval, but the resume asks the policy again, which
// binds another hash, so it pauses on a new approval with no votes and
// executes nothing.
func caseQuorum_ChangedRequirementDoesNotInheritVotes(t *testing.T, bk *Backend) {
	q := newQuorumEnv(t, bk, twoOfFinance(), nil)
	for _, who := range []string{"alice", "bob"} {
		if err := q.vote(t, who, true); err != nil {
			t.Fatal(err)
		}
	}
	three := twoOfFinance()
	three.Requirement.Stages[0].M = 3
	resumePauses(t, q.driver(three), "run-1", "a resume under a changed requirement")
	a := kit.PendingApproval(t, q.Store, "run-1")
	if a.ID == q.a.ID || a.Requirement == nil || a.Requirement.Stages[0].M != 3 || q.send.N() != 0 {
		t.Fatalf("the new approval %s (%+v), %d sends", a.ID, a.Requirement, q.send.N())
	}
	for _, ev := range kit.EventsOf(t, q.Store, "run-1", agentrt.EventApprovalVoted) {
		if v, ok := agentrt.VoteOf(ev); !ok || v.ApprovalID != q.a.ID {
			t.Fatalf("a vote belongs to %s", v.ApprovalID)
		}
	}
}

// A payment nobody decides within its ApprovalTTL ends as decision_ttl; one
// granted by its second vote but not executed within GrantTTL ends as
// execution_ttl; each is in approval.decided and the run's detail.
func caseQuorum_EachExpiryEndsWithItsOwnNamedReason(t *testing.T, bk *Backend) {
	ctx := context.Background()
	for _, c := range []struct {
		want  agentrt.ApprovalExpiry
		votes []string
	}{{agentrt.ExpiryDecision, []string{"alice"}}, {agentrt.ExpiryExecution, []string{"alice", "bob"}}} {
		t.Run(string(c.want), func(t *testing.T) {
			q := newQuorumEnv(t, bk, twoOfFinance(), func(l *agentrt.Limits) {
				l.ApprovalTTL, l.GrantTTL = time.Hour, time.Hour
			})
			for _, who := range c.votes {
				if err := q.vote(t, who, true); err != nil {
					t.Fatal(err)
				}
			}
			q.Clock.Advance(2 * time.Hour)
			run, err := q.driver(twoOfFinance()).Resume(ctx, "run-1")
			if err != nil && !errors.Is(err, agentrt.ErrApprovalExpired) {
				t.Fatal(err)
			}
			if run, _ = q.Store.GetRun(ctx, "run-1"); run.Reason != agentrt.ReasonApprovalExpired || q.send.N() != 0 {
				t.Fatalf("run %s %s, %d sends", run.Status, run.Reason, q.send.N())
			}
			var got agentrt.ApprovalExpiry
			for _, ev := range kit.EventsOf(t, q.Store, "run-1", agentrt.EventApprovalDecided) {
				if p, err := agentrt.PayloadAs[agentrt.ApprovalDecidedPayload](ev); err == nil && p.Status == agentrt.ApprovalExpired {
					got = p.Expiry
				}
			}
			if got != c.want || !strings.Contains(run.ReasonDetail, string(c.want)) {
				t.Fatalf("expiry %q, detail %q; want %q", got, run.ReasonDetail, c.want)
			}
		})
	}
}

// An approver scoped to another tool is refused on a single-decision
// approval, and a grant decided by an approver whose scope was narrowed
// since executes nothing.
func caseQuorum_ScopeBindsSingleDecisions(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	ap, key := keyApprover(t, e.Operator(), "frank")
	if _, err := e.Operator().SetApproverAccess(ctx, "frank", agentrt.ApproverAccess{Scope: agentrt.ApproverScope{Tools: []string{"refund"}}}, "admin"); err != nil {
		t.Fatal(err)
	}
	send, a := pausedWith(t, e, askApproval, agentrt.DefaultLimits())
	sig := sign(t, key, ap, statement(e, a, agentrt.StatementApprove, ""))
	before := e.db.snapshot(t)
	err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "", "", agentrt.WithSignature(sig))
	if !errors.Is(err, agentrt.ErrOutOfScope) {
		t.Fatalf("an out-of-scope decision = %v", err)
	}
	e.db.requireUnchanged(t, before, "an out-of-scope decision")
	if _, err := e.Operator().SetApproverAccess(ctx, "frank", agentrt.ApproverAccess{}, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "", "", agentrt.WithSignature(sig)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Operator().SetApproverAccess(ctx, "frank", agentrt.ApproverAccess{Scope: agentrt.ApproverScope{Kinds: []string{"refund"}}}, "admin"); err != nil {
		t.Fatal(err)
	}
	d := e.Driver(kit.Script(kit.Complete(`{}`)), kit.Fixed(askApproval), send)
	if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrQuorumNotMet) || send.N() != 0 {
		t.Fatalf("Resume of a grant whose decider is out of scope = %v, %d sends", err, send.N())
	}
}
