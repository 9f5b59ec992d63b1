package webhook_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/webhook"
)

// alice is enrolled to decide refunds only: her approve and her reject of
// a send, through the webhook, are 403 out_of_scope and change nothing;
// once her scope covers sends, her approve is granted.
func TestHandler_DecisionOutsideTheApproversScopeIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	op := agentrt.Operator{Store: r.f.Store, Now: r.f.Clock.Now}
	if _, err := op.EnrollApprover(ctx, agentrt.NewApprover{Name: "alice", Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "admin",
		Access: agentrt.ApproverAccess{Scope: agentrt.ApproverScope{Tools: []string{"refund"}}}}); err != nil {
		t.Fatal(err)
	}
	a := r.f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	before := r.f.Take(t)
	for _, path := range []string{approvePath(a), rejectPath(a)} {
		if got := r.send(t, http.MethodPost, path, decision(a, "alice")); got.status != http.StatusForbidden || got.code() != webhook.CodeOutOfScope {
			t.Fatalf("%s out of scope = %d %s", path, got.status, got.body)
		}
	}
	r.f.Unchanged(t, before, "out-of-scope decisions")
	if _, err := op.SetApproverAccess(ctx, "alice", agentrt.ApproverAccess{Scope: agentrt.ApproverScope{Tools: []string{"refund", a.Request.Spec.Name}}}, "admin"); err != nil {
		t.Fatal(err)
	}
	if got := r.send(t, http.MethodPost, approvePath(a), decision(a, "alice")); got.status != http.StatusAccepted {
		t.Fatalf("approve in scope = %d %s", got.status, got.body)
	}
}
