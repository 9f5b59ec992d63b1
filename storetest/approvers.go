package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// approvers: enrollment is unique by unremoved name and by credential,
// removal is a compare-and-set, invitations are found by their token's
// hash and used once, a signed decision keeps its signature, and events
// of no run chain like any other.
func approvers(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	pub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public()
	der, err := x509.MarshalPKIXPublicKey(pub)
	must(t, err)
	ap := agentrt.EnrolledApprover{ID: "ap1", Name: "alice", Kind: agentrt.ApproverKeyFile, Algorithm: agentrt.AlgEdDSA,
		CredentialID: agentrt.KeyFingerprint(der), PublicKey: der, EnrolledAt: t0, EnrolledBy: "admin"}
	insert := func(a agentrt.EnrolledApprover) error {
		_, err := update(t, s, func(tx agentrt.Tx) error { return tx.ApproverInsert(a) })
		return err
	}
	must(t, insert(ap))
	same := ap
	same.ID, same.CredentialID = "ap2", "other"
	if err := insert(same); !errors.Is(err, agentrt.ErrApproverExists) {
		t.Fatalf("a second unremoved alice = %v, want ErrApproverExists", err)
	}
	dup := ap
	dup.ID, dup.Name = "ap3", "bob"
	if err := insert(dup); !errors.Is(err, agentrt.ErrApproverExists) {
		t.Fatalf("the same credential again = %v, want ErrApproverExists", err)
	}
	remove := func() error {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			return tx.ApproverRemove(agentrt.ApproverRemove{ID: "ap1", RemovedAt: t0.Add(time.Hour), RemovedBy: "admin"})
		})
		return err
	}
	must(t, remove())
	if err := remove(); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a second removal = %v, want ErrRunState", err)
	}
	must(t, insert(same)) // the name is free once alice is removed
	got, err := s.GetApprover(ctx, "ap1")
	must(t, err)
	if !got.Removed() || got.RemovedBy != "admin" || string(got.PublicKey) != string(der) || got.DecodeError != "" {
		t.Fatalf("removed approver = %+v", got)
	}
	all, err := s.ListApprovers(ctx)
	must(t, err)
	if len(all) != 2 || all[0].ID != "ap1" || all[1].ID != "ap2" {
		t.Fatalf("ListApprovers = %+v", all)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		a, err := tx.ApproverByName("alice")
		if err != nil || a.ID != "ap2" {
			return fmt.Errorf("ApproverByName = %+v, %v; want ap2", a, err)
		}
		return nil
	})
	must(t, err)

	inv := agentrt.ApproverInvite{ID: "i1", TokenHash: "th", Name: "carol", CreatedAt: t0, CreatedBy: "admin", ExpiresAt: t0.Add(time.Minute)}
	_, err = update(t, s, func(tx agentrt.Tx) error { return tx.InviteInsert(inv) })
	must(t, err)
	use := func() error {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			got, err := tx.InviteGet("th")
			if err != nil {
				return err
			}
			if got.Name != "carol" || !got.ExpiresAt.Equal(inv.ExpiresAt) {
				return fmt.Errorf("InviteGet = %+v", got)
			}
			return tx.InviteUse(agentrt.InviteUse{ID: "i1", UsedAt: t0, ApproverID: "ap9"})
		})
		return err
	}
	must(t, use())
	if err := use(); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("a second use = %v, want ErrRunState", err)
	}
	_, err = update(t, s, func(tx agentrt.Tx) error { _, err := tx.InviteGet("nope"); return err })
	if !errors.Is(err, agentrt.ErrInvite) {
		t.Fatalf("an unknown token hash = %v, want ErrInvite", err)
	}

	// A signed decision keeps its signature, approver and credential.
	insertRun(t, s, "r1")
	a := agentrt.Approval{ID: "a1", RunID: "r1", StepID: "s1", Kind: "k", Capability: json.RawMessage(`{}`),
		Presentation: json.RawMessage(`{}`), Request: agentrt.ToolRequest{RunID: "r1", StepID: "s1", Args: json.RawMessage(`{}`)},
		Hash: "h1", Status: agentrt.ApprovalPending, CreatedAt: t0}
	_, err = update(t, s, func(tx agentrt.Tx) error { return tx.ApprovalInsert(a) })
	must(t, err)
	sig := &agentrt.DecisionSignature{Statement: agentrt.Statement{RunID: "r1", ApprovalID: "a1", ApprovalHash: "h1", Decision: "approve", Nonce: "n", Time: t0},
		ApproverID: "ap2", CredentialID: "other", Algorithm: agentrt.AlgEdDSA, Signature: []byte{1, 2, 3}}
	_, err = update(t, s, func(tx agentrt.Tx) error {
		return tx.ApprovalDecide(agentrt.ApprovalDecide{ID: "a1", RunID: "r1", From: agentrt.ApprovalPending, Hash: "h1",
			Status: agentrt.ApprovalApproved, DecidedAt: t0, DecidedBy: "alice", Signature: sig})
	})
	must(t, err)
	dec, err := s.GetApproval(ctx, "r1", "a1")
	must(t, err)
	if dec.ApproverID != "ap2" || dec.CredentialID != "other" || dec.Signature == nil || string(dec.Signature.Signature) != "\x01\x02\x03" ||
		!dec.Signature.Statement.Time.Equal(t0) {
		t.Fatalf("signed approval = %+v", dec)
	}

	// An event of no run chains.
	_, err = update(t, s, func(tx agentrt.Tx) error {
		_, err := tx.EventAppend(agentrt.Event{RunID: "", At: t0, Type: agentrt.EventApproverEnrolled, Payload: json.RawMessage(`{"name":"alice"}`)})
		return err
	})
	must(t, err)
	rep, err := s.VerifyEvents(ctx, 0, 0)
	must(t, err)
	if !rep.Intact() || rep.Checked < 1 {
		t.Fatalf("VerifyEvents = %+v", rep)
	}
}

// waitingApprovals: the inbox pages every run's pending approvals oldest
// first and counts them all.
func waitingApprovals(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "r1")
	insertRun(t, s, "r2")
	_, err := update(t, s, func(tx agentrt.Tx) error {
		for i := 0; i < 5; i++ {
			status := agentrt.ApprovalPending
			if i == 2 {
				status = agentrt.ApprovalApproved
			}
			run := []string{"r1", "r2"}[i%2]
			if err := tx.ApprovalInsert(agentrt.Approval{ID: fmt.Sprintf("a%d", i), RunID: run, StepID: "s", Kind: "k",
				Capability: json.RawMessage(`{}`), Presentation: json.RawMessage(`{}`), Request: agentrt.ToolRequest{Args: json.RawMessage(`{}`)},
				Hash: "h", Status: status, CreatedAt: t0.Add(time.Duration(5-i) * time.Minute)}); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	page, total, err := s.ListWaitingApprovals(ctx, 2, 0)
	must(t, err)
	if total != 4 || len(page) != 2 || page[0].ID != "a4" || page[1].ID != "a3" {
		t.Fatalf("first page = %v (total %d), want a4 a3 of 4", ids(page), total)
	}
	page, _, err = s.ListWaitingApprovals(ctx, 2, 2)
	must(t, err)
	if len(page) != 2 || page[0].ID != "a1" || page[1].ID != "a0" {
		t.Fatalf("second page = %v, want a1 a0", ids(page))
	}
	if _, _, err := s.ListWaitingApprovals(ctx, 0, 0); err == nil {
		t.Fatal("a page of no rows was read")
	}
}

func ids(as []agentrt.Approval) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}
