package agentrt_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// statement is a fresh statement about a on the env's clock.
func statement(e *env, a agentrt.Approval, decision, note string) agentrt.Statement {
	return agentrt.Statement{RunID: a.RunID, ApprovalID: a.ID, ApprovalHash: a.Hash, Decision: decision, Note: note,
		Nonce: agentrt.NewNonce(), Time: e.Clock.Now()}
}

// assertion makes a WebAuthn assertion over st as an authenticator would:
// authenticator data for rpID with the flags given, client data at origin
// with the statement's challenge, an ECDSA P-256 signature over both.
func assertion(t testing.TB, key *ecdsa.PrivateKey, ap agentrt.EnrolledApprover, st agentrt.Statement, rpID, origin, typ string, flags byte) agentrt.DecisionSignature {
	t.Helper()
	ch, err := st.Challenge()
	if err != nil {
		t.Fatal(err)
	}
	cd, _ := json.Marshal(map[string]any{"type": typ, "challenge": base64.RawURLEncoding.EncodeToString(ch), "origin": origin, "crossOrigin": false})
	rp := sha256.Sum256([]byte(rpID))
	ad := append(rp[:], flags)
	ad = binary.BigEndian.AppendUint32(ad, 7)
	cdh := sha256.Sum256(cd)
	d := sha256.Sum256(append(append([]byte(nil), ad...), cdh[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return agentrt.DecisionSignature{Statement: st, ApproverID: ap.ID, CredentialID: ap.CredentialID, Algorithm: agentrt.AlgES256,
		Signature: sig, AuthenticatorData: ad, ClientDataJSON: cd}
}

// A passkey's assertion verifies with the standard library alone when it
// is for the statement's challenge, at the enrolled origin and relying
// party, with the user present and verified; each of those wrong fails.
func TestVerifyDecision_PasskeyAssertion(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	ap := agentrt.EnrolledApprover{ID: "ap1", Name: "alice", Kind: agentrt.ApproverPasskey, Algorithm: agentrt.AlgES256, CredentialID: "Y3JlZA",
		PublicKey: der, RPID: "localhost", Origin: "http://localhost:7380"}
	st := agentrt.Statement{RunID: "r", ApprovalID: "a", ApprovalHash: "h", Decision: "approve", Nonce: "n", Time: time.Unix(1e9, 0)}
	good := assertion(t, key, ap, st, "localhost", ap.Origin, "webauthn.get", 0x05)
	if err := agentrt.VerifyDecision(ap, good); err != nil {
		t.Fatalf("a good assertion: %v", err)
	}
	other := st
	other.Note = "changed"
	moved := good
	moved.Statement = other
	for name, sig := range map[string]agentrt.DecisionSignature{
		"other statement": moved,
		"other origin":    assertion(t, key, ap, st, "localhost", "http://evil.test", "webauthn.get", 0x05),
		"other rp":        assertion(t, key, ap, st, "evil.test", ap.Origin, "webauthn.get", 0x05),
		"not verified":    assertion(t, key, ap, st, "localhost", ap.Origin, "webauthn.get", 0x01),
		"registration":    assertion(t, key, ap, st, "localhost", ap.Origin, "webauthn.create", 0x05),
	} {
		if err := agentrt.VerifyDecision(ap, sig); !errors.Is(err, agentrt.ErrSignature) {
			t.Errorf("%s: VerifyDecision = %v, want ErrSignature", name, err)
		}
	}
}

// benchDecisions makes n runs each waiting on one approval, written
// straight into the store, and a passkey approver to sign them.
func benchDecisions(b *testing.B, n int) (*env, []agentrt.Approval, *ecdsa.PrivateKey, agentrt.EnrolledApprover) {
	e := newEnv(b)
	ctx := context.Background()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	ap, err := e.Operator().EnrollApprover(ctx, agentrt.NewApprover{Name: "alice", Kind: agentrt.ApproverPasskey, PublicKey: der,
		CredentialID: "Y3JlZA", RPID: "localhost", Origin: "http://localhost:7380", By: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	req := agentrt.ToolRequest{Spec: agentrt.ToolSpec{Name: "send", InputSchema: json.RawMessage(kit.PathSchema)}, Args: json.RawMessage(`{"path":"/r"}`)}
	h, err := agentrt.ApprovalHash("send", json.RawMessage(`{}`), json.RawMessage(`{}`), req)
	if err != nil {
		b.Fatal(err)
	}
	var as []agentrt.Approval
	_, err = e.store.Update(ctx, func(tx agentrt.Tx) error {
		for i := 0; i < n; i++ {
			run := fmt.Sprintf("run-%d", i)
			if err := tx.RunInsert(agentrt.Run{ID: run, Status: agentrt.RunWaiting, CreatedAt: e.Clock.Now(), Limits: agentrt.DefaultLimits()}); err != nil {
				return err
			}
			a := agentrt.Approval{ID: fmt.Sprintf("ap-%d", i), RunID: run, StepID: "s", Kind: "send", Capability: json.RawMessage(`{}`),
				Presentation: json.RawMessage(`{}`), Request: req, Hash: h, Status: agentrt.ApprovalPending, CreatedAt: e.Clock.Now()}
			if err := tx.ApprovalInsert(a); err != nil {
				return err
			}
			as = append(as, a)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return e, as, key, ap
}

// BenchmarkDecide_Unsigned is a durable ApproveShown: the commit alone.
func BenchmarkDecide_Unsigned(b *testing.B) {
	e, as, _, _ := benchDecisions(b, b.N)
	op := e.Operator()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op.ApproveShown(context.Background(), as[i].RunID, as[i].ID, as[i].Hash, "op", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecide_SignedPasskey is the same decision with a passkey's
// assertion over its statement, verified with the standard library inside
// the deciding transaction: the difference from BenchmarkDecide_Unsigned is
// what a signature costs.
func BenchmarkDecide_SignedPasskey(b *testing.B) {
	e, as, key, ap := benchDecisions(b, b.N)
	op := e.Operator()
	sigs := make([]agentrt.DecisionSignature, b.N)
	for i := range sigs {
		sigs[i] = assertion(b, key, ap, statement(e, as[i], agentrt.StatementApprove, ""), "localhost", ap.Origin, "webauthn.get", 0x05)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op.ApproveShown(context.Background(), as[i].RunID, as[i].ID, as[i].Hash, "", "", agentrt.WithSignature(sigs[i])); err != nil {
			b.Fatal(err)
		}
	}
}
