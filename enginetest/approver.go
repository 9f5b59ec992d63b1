package enginetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// keyApprover enrolls an ed25519 key-file approver through op and returns
// it with its private key.
func keyApprover(t *testing.T, op agentrt.Operator, name string) (agentrt.EnrolledApprover, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := op.EnrollApprover(context.Background(), agentrt.NewApprover{Name: name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "admin"})
	if err != nil {
		t.Fatalf("EnrollApprover: %v", err)
	}
	return ap, priv
}

// statement is a fresh statement about a on the env's clock.
func statement(e *env, a agentrt.Approval, decision, note string) agentrt.Statement {
	return agentrt.Statement{RunID: a.RunID, ApprovalID: a.ID, ApprovalHash: a.Hash, Decision: decision, Note: note,
		Nonce: agentrt.NewNonce(), Time: e.Clock.Now()}
}

func sign(t *testing.T, key ed25519.PrivateKey, ap agentrt.EnrolledApprover, st agentrt.Statement) agentrt.DecisionSignature {
	t.Helper()
	sig, err := agentrt.SignStatement(key, ap, st)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// grantSigned pauses run-1 under pd and grants it with a signature, over
// note, by a key-file approver enrolled as alice. It returns the approver,
// its key, the paused call's tool and the approval as it was shown.
func grantSigned(t *testing.T, e *env, pd agentrt.PolicyDecision, note string) (agentrt.EnrolledApprover, ed25519.PrivateKey, *kit.Counted, agentrt.Approval) {
	t.Helper()
	ap, key := keyApprover(t, e.Operator(), "alice")
	send, a := pausedWith(t, e, pd, agentrt.DefaultLimits())
	sig := sign(t, key, ap, statement(e, a, agentrt.StatementApprove, note))
	if err := e.Operator().ApproveShown(context.Background(), "run-1", a.ID, a.Hash, "", note, agentrt.WithSignature(sig)); err != nil {
		t.Fatalf("ApproveShown signed: %v", err)
	}
	return ap, key, send, a
}

// pausedWith starts run-1 whose one send call the policy pd pauses.
func pausedWith(t *testing.T, e *env, pd agentrt.PolicyDecision, l agentrt.Limits) (*kit.Counted, agentrt.Approval) {
	t.Helper()
	send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	d := e.Driver(kit.Script(kit.Call("send", `{"path":"/report"}`)), kit.Fixed(pd), send)
	run, err := d.StartWithID(context.Background(), "run-1", "g", l)
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v; want a pause", run.Status, err)
	}
	return send, kit.PendingApproval(t, e.Store, "run-1")
}

var askApproval = agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "send", Reason: "writes"}

// A key-file approver signs an approval's statement; the decision records
// the signature, the approver and its credential on the row and in the
// approval.decided event, decided_by is the enrolled name (not the label
// given), and the stored signature verifies offline with the stored key.
// One byte changed in the stored signature makes it fail.
func caseApprovers_SignedDecisionIsRecordedAndVerifiesOffline(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	ap, _, send, a := grantSigned(t, e, askApproval, "ok")
	got, err := e.Store.GetApproval(ctx, "run-1", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.DecidedBy != "alice" || got.ApproverID != ap.ID || got.CredentialID != ap.CredentialID || got.Signature == nil {
		t.Fatalf("decided approval = by %q approver %q credential %q signature %v", got.DecidedBy, got.ApproverID, got.CredentialID, got.Signature)
	}
	stored, err := e.Store.GetApprover(ctx, ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := agentrt.VerifyDecision(stored, *got.Signature); err != nil {
		t.Fatalf("the stored signature does not verify: %v", err)
	}
	decided := kit.EventsOf(t, e.Store, "run-1", agentrt.EventApprovalDecided)
	var p struct {
		By        string                     `json:"by"`
		Approver  string                     `json:"approver_id"`
		Signature *agentrt.DecisionSignature `json:"signature"`
	}
	if err := json.Unmarshal(decided[0].Payload, &p); err != nil || p.By != "alice" || p.Approver != ap.ID || p.Signature == nil {
		t.Fatalf("approval.decided = %s", decided[0].Payload)
	}
	if err := agentrt.VerifyDecision(stored, *p.Signature); err != nil {
		t.Fatalf("the event's signature does not verify: %v", err)
	}
	for i := range got.Signature.Signature {
		bad := *got.Signature
		bad.Signature = append([]byte(nil), bad.Signature...)
		bad.Signature[i] ^= 1
		if err := agentrt.VerifyDecision(stored, bad); !errors.Is(err, agentrt.ErrSignature) {
			t.Fatalf("byte %d of the signature altered: VerifyDecision = %v, want ErrSignature", i, err)
		}
	}
	// The enrollment is in the chain, naming who enrolled whom.
	enrolled := kit.EventsOf(t, e.Store, "", agentrt.EventApproverEnrolled)
	if len(enrolled) != 1 || kit.Payload(t, enrolled[0])["by"] != "admin" || kit.Payload(t, enrolled[0])["name"] != "alice" {
		t.Fatalf("approver.enrolled events = %v", enrolled)
	}
	d := e.Driver(kit.Script(kit.Call("send", `{"path":"/report"}`), kit.Complete(`{}`)), kit.Fixed(askApproval), send)
	if _, err := d.Resume(ctx, "run-1"); err != nil || send.N() != 1 {
		t.Fatalf("Resume of a signed grant = %v, send ran %d times; want once", err, send.N())
	}
}

// A signature that is not for this decision is refused and nothing is
// written: a statement about another hash, another decision or note, one
// signed long ago, by a removed approver, one whose "by" names someone
// else, or one whose key is another's.
func caseApprovers_SignedDecisionMustBeThisOne(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	ap, key := keyApprover(t, e.Operator(), "alice")
	other, otherKey := keyApprover(t, e.Operator(), "bob")
	_, a := pausedWith(t, e, askApproval, agentrt.DefaultLimits())
	cases := []struct {
		name string
		sig  func() agentrt.DecisionSignature
		by   string
	}{
		{"other hash", func() agentrt.DecisionSignature {
			st := statement(e, a, agentrt.StatementApprove, "")
			st.ApprovalHash = "00" + st.ApprovalHash[2:]
			return sign(t, key, ap, st)
		}, ""},
		{"reject statement", func() agentrt.DecisionSignature {
			return sign(t, key, ap, statement(e, a, agentrt.StatementReject, ""))
		}, ""},
		{"other note", func() agentrt.DecisionSignature {
			return sign(t, key, ap, statement(e, a, agentrt.StatementApprove, "x"))
		}, ""},
		{"stale", func() agentrt.DecisionSignature {
			st := statement(e, a, agentrt.StatementApprove, "")
			st.Time = st.Time.Add(-agentrt.MaxStatementAge - time.Second)
			return sign(t, key, ap, st)
		}, ""},
		{"by someone else", func() agentrt.DecisionSignature {
			return sign(t, key, ap, statement(e, a, agentrt.StatementApprove, ""))
		}, "mallory"},
		{"another's key", func() agentrt.DecisionSignature {
			return sign(t, otherKey, ap, statement(e, a, agentrt.StatementApprove, ""))
		}, ""},
	}
	for _, c := range cases {
		before := e.db.snapshot(t)
		err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, c.by, "", agentrt.WithSignature(c.sig()))
		if !errors.Is(err, agentrt.ErrSignature) {
			t.Fatalf("%s: ApproveShown = %v, want ErrSignature", c.name, err)
		}
		e.db.requireUnchanged(t, before, c.name)
	}
	if _, err := e.Operator().RemoveApprover(ctx, "bob", "admin"); err != nil {
		t.Fatal(err)
	}
	before := e.db.snapshot(t)
	err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "", "", agentrt.WithSignature(sign(t, otherKey, other, statement(e, a, agentrt.StatementApprove, ""))))
	if !errors.Is(err, agentrt.ErrSignature) {
		t.Fatalf("removed approver: ApproveShown = %v, want ErrSignature", err)
	}
	e.db.requireUnchanged(t, before, "a removed approver's signature")
	removed := kit.EventsOf(t, e.Store, "", agentrt.EventApproverRemoved)
	if len(removed) != 1 || kit.Payload(t, removed[0])["name"] != "bob" || kit.Payload(t, removed[0])["by"] != "admin" {
		t.Fatalf("approver.removed events = %v", removed)
	}
}

// A run with Limits.RequireSignedGrant refuses an unsigned approval
// (ErrUnsignedGrant, nothing written). A grant written straight into the
// database without a signature is refused by Resume as a tampered record
// (no approval.decided event holds it), which executes nothing and leaves
// every row as it was.
func caseResume_RefusesAnUnsignedGrantOfARunThatRequiresOne(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	send, a := pausedWith(t, e, askApproval, kit.Limits(func(l *agentrt.Limits) { l.RequireSignedGrant = true }))
	before := e.db.snapshot(t)
	err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", "")
	var ue *agentrt.UnsignedGrantError
	if !errors.Is(err, agentrt.ErrUnsignedGrant) || !errors.As(err, &ue) || ue.Required != "run" {
		t.Fatalf("unsigned ApproveShown = %v, want ErrUnsignedGrant required by the run", err)
	}
	e.db.requireUnchanged(t, before, "a refused unsigned approval")
	e.db.exec(t, 1, `UPDATE approvals SET status = 'approved', decided_by = 'forger', decided_at = ? WHERE id = ?`,
		e.Clock.Now().Format(time.RFC3339Nano), a.ID)
	before = e.db.snapshot(t)
	d := e.Driver(kit.Script(kit.Complete(`{}`)), kit.Fixed(askApproval), send)
	if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrTamperedRecord) {
		t.Fatalf("Resume of a forged unsigned grant = %v, want ErrTamperedRecord", err)
	}
	if send.N() != 0 {
		t.Fatalf("send ran %d times", send.N())
	}
	e.db.requireUnchanged(t, before, "a refused Resume")
}

// A policy outcome may require the signature instead of the run: an
// unsigned CLI-style approval is recorded, but Resume refuses the grant
// with ErrUnsignedGrant and runs nothing. A second run, signed, resumes and
// runs the tool once; after its approver is removed, a third signed grant
// is refused at Resume.
func caseResume_PolicyRequiredSignature(t *testing.T, bk *Backend) {
	ctx := context.Background()
	pd := askApproval
	pd.RequireSignature = true
	e := newEnv(t, bk)
	send, a := pausedWith(t, e, pd, agentrt.DefaultLimits())
	if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); err != nil {
		t.Fatalf("unsigned ApproveShown: %v", err)
	}
	before := e.db.snapshot(t)
	d := e.Driver(kit.Script(kit.Complete(`{}`)), kit.Fixed(pd), send)
	_, err := d.Resume(ctx, "run-1")
	var ue *agentrt.UnsignedGrantError
	if !errors.As(err, &ue) || ue.Required != "policy" || send.N() != 0 {
		t.Fatalf("Resume = %v, send ran %d times; want ErrUnsignedGrant required by the policy and nothing run", err, send.N())
	}
	e.db.requireUnchanged(t, before, "a refused Resume")

	e2 := newEnv(t, bk)
	_, _, send2, _ := grantSigned(t, e2, pd, "")
	if _, err := e2.Operator().RemoveApprover(ctx, "alice", "admin"); err != nil {
		t.Fatal(err)
	}
	d2 := e2.Driver(kit.Script(kit.Complete(`{}`)), kit.Fixed(pd), send2)
	if _, err := d2.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrUnsignedGrant) || send2.N() != 0 {
		t.Fatalf("Resume after the signer's removal = %v, send ran %d; want ErrUnsignedGrant", err, send2.N())
	}

	e3 := newEnv(t, bk)
	ap3, key3 := keyApprover(t, e3.Operator(), "carol")
	send3, a3 := pausedWith(t, e3, pd, agentrt.DefaultLimits())
	if err := e3.Operator().ApproveShown(ctx, "run-1", a3.ID, a3.Hash, "", "", agentrt.WithSignature(sign(t, key3, ap3, statement(e3, a3, agentrt.StatementApprove, "")))); err != nil {
		t.Fatal(err)
	}
	d3 := e3.Driver(kit.Script(kit.Call("send", `{"path":"/report"}`), kit.Complete(`{}`)), kit.Fixed(pd), send3)
	if _, err := d3.Resume(ctx, "run-1"); err != nil || send3.N() != 1 {
		t.Fatalf("Resume of a signed grant = %v, send ran %d; want once", err, send3.N())
	}
}

// With pinned keys, a grant signed by an approver enrolled in the database
// but not pinned is refused, and one whose key is pinned runs. No one but
// its owner may write the pinned file.
func caseResume_PinnedKeysExcludeKeysEnrolledOnlyInTheDatabase(t *testing.T, bk *Backend) {
	ctx := context.Background()
	for _, pin := range []bool{false, true} {
		e := newEnv(t, bk)
		ap, key := keyApprover(t, e.Operator(), "alice")
		send, a := pausedWith(t, e, askApproval, agentrt.DefaultLimits())
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "", "", agentrt.WithSignature(sign(t, key, ap, statement(e, a, agentrt.StatementApprove, "")))); err != nil {
			t.Fatal(err)
		}
		other, _ := keyApprover(t, e.Operator(), "trusted")
		lines := agentrt.PinnedLine(other) + "\n"
		if pin {
			lines += agentrt.PinnedLine(ap) + "\n"
		}
		path := filepath.Join(t.TempDir(), "pinned")
		if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o664); err != nil {
			t.Fatal(err)
		}
		if _, err := agentrt.LoadPinnedKeys(path); !errors.Is(err, agentrt.ErrInsecureMode) {
			t.Fatalf("LoadPinnedKeys of a group-writable file = %v, want ErrInsecureMode", err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		pinned, err := agentrt.LoadPinnedKeys(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.Config(kit.Script(kit.Call("send", `{"path":"/report"}`), kit.Complete(`{}`)), kit.Fixed(askApproval), send)
		cfg.PinnedKeys = pinned
		_, err = e.DriverFor(cfg).Resume(ctx, "run-1")
		if pin && (err != nil || send.N() != 1) {
			t.Fatalf("pinned: Resume = %v, send ran %d; want once", err, send.N())
		}
		if !pin && (!errors.Is(err, agentrt.ErrUnsignedGrant) || send.N() != 0) {
			t.Fatalf("not pinned: Resume = %v, send ran %d; want ErrUnsignedGrant", err, send.N())
		}
	}
}

// An invitation is stored only as its token's hash, enrolls once, and not
// after InviteTTL; the enrollment event names the inviter and the
// invitation.
func caseApprovers_InvitationIsOneTimeAndExpires(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	token, inv, err := e.Operator().InviteApprover(ctx, "alice", "admin")
	if err != nil {
		t.Fatal(err)
	}
	if n := e.db.countRows(t, `SELECT 1 FROM approver_invites WHERE token_hash = ?`, agentrt.TokenHash(token)); n != 1 {
		t.Fatalf("%d invitations stored by the token's hash", n)
	}
	if n := e.db.countRows(t, `SELECT 1 FROM approver_invites WHERE token_hash = ? OR id = ?`, token, token); n != 0 {
		t.Fatal("the token itself is stored")
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	n := agentrt.NewApprover{Kind: agentrt.ApproverPasskey, PublicKey: der, CredentialID: "Y3JlZA", RPID: "localhost", Origin: "http://localhost:7380"}
	ap, err := e.Operator().EnrollInvited(ctx, token, n)
	if err != nil || ap.Name != "alice" || ap.EnrolledBy != "admin" {
		t.Fatalf("EnrollInvited = %+v, %v", ap, err)
	}
	n.CredentialID = "b3RoZXI"
	if _, err := e.Operator().EnrollInvited(ctx, token, n); !errors.Is(err, agentrt.ErrInvite) {
		t.Fatalf("a second use = %v, want ErrInvite", err)
	}
	enrolled := kit.EventsOf(t, e.Store, "", agentrt.EventApproverEnrolled)
	if len(enrolled) != 1 || kit.Payload(t, enrolled[0])["invite_id"] != inv.ID || kit.Payload(t, enrolled[0])["by"] != "admin" {
		t.Fatalf("approver.enrolled = %v", enrolled)
	}
	token2, _, err := e.Operator().InviteApprover(ctx, "bob", "admin")
	if err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(agentrt.InviteTTL)
	if _, err := e.Operator().EnrollInvited(ctx, token2, n); !errors.Is(err, agentrt.ErrInvite) {
		t.Fatalf("an expired invitation = %v, want ErrInvite", err)
	}
	if _, err := e.Operator().EnrollInvited(ctx, "not-a-token", n); !errors.Is(err, agentrt.ErrInvite) {
		t.Fatalf("an unknown token = %v, want ErrInvite", err)
	}
}
