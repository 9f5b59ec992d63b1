package agentrt_test

import (
	"context"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// A policy's TTL on a require_approval bounds how long the approval stays
// pending, but only ever shortens the run's ApprovalTTL: the approval
// expires at the shorter of the two, and without either it never expires.
func TestPolicy_ApprovalTTLOnlyShortensTheLimit(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name          string
		limit, policy time.Duration
		want          time.Duration // 0: no expiry
	}{
		{"policy alone", 0, time.Minute, time.Minute},
		{"policy shorter than the limit", time.Hour, time.Minute, time.Minute},
		{"policy longer than the limit", time.Minute, time.Hour, time.Minute},
		{"limit alone", time.Minute, 0, time.Minute},
		{"a negative policy TTL is ignored", time.Minute, -time.Second, time.Minute},
		{"neither", 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
			pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "send", TTL: c.policy}
			d := e.Driver(kit.Script(kit.Call("send", `{"path":"/x"}`)), kit.Fixed(pd), send)
			run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.ApprovalTTL = c.limit }))
			if err != nil || run.Status != agentrt.RunWaiting {
				t.Fatalf("Start = %s, %v", run.Status, err)
			}
			a := kit.PendingApproval(t, e.store, "run-1")
			switch {
			case c.want == 0 && !a.ExpiresAt.IsZero():
				t.Fatalf("approval expires at %s, want never", a.ExpiresAt)
			case c.want != 0 && !a.ExpiresAt.Equal(a.CreatedAt.Add(c.want)):
				t.Fatalf("approval expires %s after it was created, want %s", a.ExpiresAt.Sub(a.CreatedAt), c.want)
			}
			if st := kit.MustSteps(t, e.store, "run-1"); st[0].Policy == nil || st[0].Policy.TTL != c.policy {
				t.Fatalf("recorded policy decision %+v, want TTL %s", st[0].Policy, c.policy)
			}
		})
	}
}

// A policy built with NeedApproval and ExpiresAfter gives each kind its own
// wait: in runs with the same limits a payment expires 15 minutes after it
// asks while a file write waits a day, and the run's ApprovalTTL still caps
// both. A payment resumed past its TTL is expired, never rejected.
func TestNeedApproval_ExpiresAfterSetsTheTTLPerKind(t *testing.T) {
	ctx := context.Background()
	byKind := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		if req.Spec.Name == "pay" {
			return agentrt.NeedApproval("payment", "payments need a person", nil, nil, agentrt.ExpiresAfter(15*time.Minute))
		}
		return agentrt.NeedApproval("file_write", "writes need a person", nil, nil, agentrt.ExpiresAfter(24*time.Hour))
	})
	cases := []struct {
		tool  string
		limit time.Duration
		want  time.Duration
	}{
		{"pay", 0, 15 * time.Minute},
		{"write", 0, 24 * time.Hour},
		{"pay", time.Hour, 15 * time.Minute},
		{"write", time.Hour, time.Hour},
	}
	for _, c := range cases {
		e := newEnv(t)
		tool := kit.NewTool(c.tool, agentrt.RemoteMutation, kit.PathSchema, nil)
		d := e.Driver(kit.Script(kit.Call(c.tool, `{"path":"/x"}`), kit.Complete(`{}`)), byKind, tool)
		if run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.ApprovalTTL = c.limit })); err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("%s: Start = %s, %v", c.tool, run.Status, err)
		}
		a := kit.PendingApproval(t, e.store, "run-1")
		if got := a.ExpiresAt.Sub(a.CreatedAt); got != c.want {
			t.Fatalf("%s under limit %s: approval waits %s, want %s", c.tool, c.limit, got, c.want)
		}
		if c.tool != "pay" || c.limit != 0 {
			continue
		}
		e.Clock.Advance(15 * time.Minute)
		run, err := d.Resume(ctx, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		got := kit.MustApprovals(t, e.store, "run-1")[0]
		if run.Status != agentrt.RunCancelled || run.Reason != agentrt.ReasonApprovalExpired || got.Status != agentrt.ApprovalExpired {
			t.Fatalf("payment past its TTL: run %s/%s, approval %s; want cancelled/approval_expired, expired", run.Status, run.Reason, got.Status)
		}
		if tool.N() != 0 {
			t.Fatal("an expired payment ran")
		}
	}
}

// An option given as nil is skipped, and NeedApproval without options
// leaves the TTL to the run's limit.
func TestNeedApproval_NoOptionLeavesTheTTLToTheLimit(t *testing.T) {
	pd, err := agentrt.NeedApproval("k", "r", nil, nil, nil)
	if err != nil || pd.TTL != 0 {
		t.Fatalf("NeedApproval = %+v, %v; want no TTL", pd, err)
	}
	pd, err = agentrt.NeedApproval("k", "r", nil, nil, agentrt.ExpiresAfter(time.Minute), agentrt.ExpiresAfter(2*time.Minute))
	if err != nil || pd.TTL != 2*time.Minute {
		t.Fatalf("NeedApproval = %+v, %v; want the last option's TTL", pd, err)
	}
}
