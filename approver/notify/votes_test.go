package notify_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
)

// A refund needs two of finance (alice, bob; dave is in ops): its request
// notification names alice and bob as who may vote; after alice's vote
// the approval.voted notification names only bob.
func TestNotifier_NamesTheApproversWhoMayStillVote(t *testing.T) {
	ctx := context.Background()
	f := fixture.New(t)
	op := agentrt.Operator{Store: f.Store, Now: f.Clock.Now}
	for name, role := range map[string]string{"alice": "finance", "bob": "finance", "dave": "ops"} {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		der, _ := x509.MarshalPKIXPublicKey(pub)
		if _, err := op.EnrollApprover(ctx, agentrt.NewApprover{Name: name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "admin",
			Access: agentrt.ApproverAccess{Roles: []string{role}}}); err != nil {
			t.Fatal(err)
		}
	}
	s := newSink(t, f.Clock)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL + "/hook", Secret: secret})
	a := f.Start(t, "run-r", fixture.Refund(`{"to":"shop","amount":900}`))
	r.untilIdle()
	if err := op.ApproveShown(ctx, "run-r", a.ID, a.Hash, "alice", "mine"); err != nil {
		t.Fatal(err)
	}
	r.untilIdle()
	got := s.notifications()
	if len(got) != 2 || got[0].Type != notify.Requested || got[1].Type != notify.Voted {
		t.Fatalf("sent %q", types(got))
	}
	if m := strings.Join(got[0].MayVote, ","); m != "alice,bob" && m != "bob,alice" {
		t.Fatalf("the request names %q as who may vote", m)
	}
	if m := strings.Join(got[1].MayVote, ","); m != "bob" || got[1].By != "alice" {
		t.Fatalf("after alice's vote: may vote %q, by %q", m, got[1].By)
	}
}
