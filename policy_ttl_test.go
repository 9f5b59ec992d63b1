package agentrt_test

import (
	"context"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
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
			send := newTool("send", agentrt.RemoteMutation, pathSchema, nil)
			pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "send", TTL: c.policy}
			d := e.driver(script(call("send", `{"path":"/x"}`)), fixed(pd), send)
			run, err := d.StartWithID(ctx, "run-1", "g", limits(func(l *agentrt.Limits) { l.ApprovalTTL = c.limit }))
			if err != nil || run.Status != agentrt.RunWaiting {
				t.Fatalf("Start = %s, %v", run.Status, err)
			}
			a := pendingApproval(t, e.store, "run-1")
			switch {
			case c.want == 0 && !a.ExpiresAt.IsZero():
				t.Fatalf("approval expires at %s, want never", a.ExpiresAt)
			case c.want != 0 && !a.ExpiresAt.Equal(a.CreatedAt.Add(c.want)):
				t.Fatalf("approval expires %s after it was created, want %s", a.ExpiresAt.Sub(a.CreatedAt), c.want)
			}
			if st := mustSteps(t, e.store, "run-1"); st[0].Policy == nil || st[0].Policy.TTL != c.policy {
				t.Fatalf("recorded policy decision %+v, want TTL %s", st[0].Policy, c.policy)
			}
		})
	}
}
