package agentrt

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// ApproverKind says how an approver's key signs a decision.
type ApproverKind string

const (
	// ApproverPasskey: a WebAuthn credential enrolled through the console.
	// It signs authenticatorData || SHA-256(clientDataJSON), whose challenge
	// is the SHA-256 of the canonical statement.
	ApproverPasskey ApproverKind = "passkey"
	// ApproverKeyFile: an ed25519 key file enrolled with 'agentrt approvers
	// add', for the CLI and bots. It signs the canonical statement itself.
	ApproverKeyFile ApproverKind = "key_file"
)

// Signature algorithms, by their COSE names.
const (
	// AlgES256 is ECDSA on P-256 with SHA-256, signatures ASN.1 DER.
	AlgES256 = "ES256"
	// AlgEdDSA is ed25519.
	AlgEdDSA = "EdDSA"
)

// EnrolledApprover is a name and one enrolled public key: a person (or a
// key file) whose signed decisions count. Enrolling and removing one are
// events in the chain (approver.enrolled, approver.removed) naming who did
// it. A removed approver keeps its row, so what it signed before its
// removal still verifies, but it can sign nothing more. It is not a
// channel that asks for decisions; that is approver.Approver.
type EnrolledApprover struct {
	ID   string       `json:"id"`
	Name string       `json:"name"`
	Kind ApproverKind `json:"kind"`
	// Algorithm is AlgES256 or AlgEdDSA.
	Algorithm string `json:"algorithm"`
	// CredentialID names the key: a passkey's credential id (base64url),
	// or a key file's fingerprint (KeyFingerprint).
	CredentialID string `json:"credential_id"`
	// PublicKey is the key's PKIX (SubjectPublicKeyInfo) DER.
	PublicKey []byte `json:"public_key"`
	// RPID and Origin are, for a passkey, the relying party its credential
	// is scoped to and the origin its assertions must name; empty for a
	// key file.
	RPID       string    `json:"rp_id,omitempty"`
	Origin     string    `json:"origin,omitempty"`
	EnrolledAt time.Time `json:"enrolled_at"`
	EnrolledBy string    `json:"enrolled_by"`
	RemovedAt  time.Time `json:"removed_at,omitzero"`
	RemovedBy  string    `json:"removed_by,omitempty"`
	// Roles and Scope are what SetApproverAccess last set: which stages of
	// a Requirement the approver may vote in, and which approvals it may
	// decide at all. None of either: no role, and every approval.
	Roles []string      `json:"roles,omitempty"`
	Scope ApproverScope `json:"scope,omitzero"`
	// DecodeError says what of the stored row did not decode; such an
	// approver verifies nothing.
	DecodeError string `json:"decode_error,omitempty"`
}

// Removed reports whether the approver was removed.
func (a EnrolledApprover) Removed() bool { return !a.RemovedAt.IsZero() }

// ApproverInvite is a one-time enrollment invitation. Only the SHA-256 of
// its token is stored.
type ApproverInvite struct {
	ID         string    `json:"id"`
	TokenHash  string    `json:"token_hash"`
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"created_at"`
	CreatedBy  string    `json:"created_by"`
	ExpiresAt  time.Time `json:"expires_at"`
	UsedAt     time.Time `json:"used_at,omitzero"`
	ApproverID string    `json:"approver_id,omitempty"`
}

// Decision verbs a statement carries.
const (
	StatementApprove = "approve"
	StatementReject  = "reject"
)

// Statement is what an approver signs: one decision about one approval,
// bound to the approval's hash, with a nonce that makes each signature
// fresh and the time it was made.
type Statement struct {
	RunID        string    `json:"run_id"`
	ApprovalID   string    `json:"approval_id"`
	ApprovalHash string    `json:"approval_hash"`
	Decision     string    `json:"decision"`
	Note         string    `json:"note" audit:"content"`
	Nonce        string    `json:"nonce"`
	Time         time.Time `json:"time"`
}

// Canonical is the statement's signed form: CanonicalJSON of its seven
// fields, all strings, the time in RFC 3339 with nanoseconds in UTC.
func (s Statement) Canonical() ([]byte, error) {
	b, err := json.Marshal(map[string]string{
		"run_id": s.RunID, "approval_id": s.ApprovalID, "approval_hash": s.ApprovalHash,
		"decision": s.Decision, "note": s.Note, "nonce": s.Nonce, "time": s.Time.UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(b)
}

// Challenge is the SHA-256 of the canonical statement: the WebAuthn
// challenge a passkey assertion over this statement carries.
func (s Statement) Challenge() ([]byte, error) {
	c, err := s.Canonical()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(c)
	return sum[:], nil
}

// DecisionSignature is a signed statement and everything needed to verify
// it offline with the approver's public key.
type DecisionSignature struct {
	Statement    Statement `json:"statement"`
	ApproverID   string    `json:"approver_id"`
	CredentialID string    `json:"credential_id"`
	Algorithm    string    `json:"algorithm"`
	// Signature is over the canonical statement (a key file), or over
	// AuthenticatorData || SHA-256(ClientDataJSON) (a passkey).
	Signature         []byte `json:"signature"`
	AuthenticatorData []byte `json:"authenticator_data,omitempty"`
	ClientDataJSON    []byte `json:"client_data_json,omitempty"`
}

// KeyFingerprint is the credential id of a key file: "ed25519:" and the
// first 32 hex digits of the SHA-256 of its PKIX DER.
func KeyFingerprint(pkix []byte) string {
	sum := sha256.Sum256(pkix)
	return "ed25519:" + hex.EncodeToString(sum[:16])
}

// SignStatement signs a statement with an ed25519 key file's private key,
// as 'agentrt approve -key' does. The approver is the one enrolled with
// the key's public half.
func SignStatement(key ed25519.PrivateKey, approver EnrolledApprover, s Statement) (DecisionSignature, error) {
	msg, err := s.Canonical()
	if err != nil {
		return DecisionSignature{}, err
	}
	return DecisionSignature{Statement: s, ApproverID: approver.ID, CredentialID: approver.CredentialID,
		Algorithm: AlgEdDSA, Signature: ed25519.Sign(key, msg)}, nil
}

// ParsePublicKey reads a PKIX DER public key that an approver may enroll:
// ECDSA on P-256 (AlgES256) or ed25519 (AlgEdDSA).
func ParsePublicKey(pkix []byte) (any, string, error) {
	k, err := x509.ParsePKIXPublicKey(pkix)
	if err != nil {
		return nil, "", fmt.Errorf("%w: the public key does not parse: %v", ErrSignature, err)
	}
	switch pk := k.(type) {
	case *ecdsa.PublicKey:
		if pk.Curve != elliptic.P256() {
			return nil, "", fmt.Errorf("%w: an ECDSA key must be on P-256", ErrSignature)
		}
		return pk, AlgES256, nil
	case ed25519.PublicKey:
		return pk, AlgEdDSA, nil
	}
	return nil, "", fmt.Errorf("%w: the public key is %T; only P-256 ECDSA and ed25519 keys are enrolled", ErrSignature, k)
}

// clientData is the part of a WebAuthn clientDataJSON a verifier reads.
type clientData struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	Origin    string `json:"origin"`
}

// WebAuthn authenticator data flags.
const (
	flagUserPresent  = 0x01
	flagUserVerified = 0x04
)

// VerifyDecision checks, with nothing but the standard library and the
// approver's stored public key, that sig is approver's signature over its
// statement: for a passkey, that the client data is an assertion
// (webauthn.get) whose challenge is the statement's and whose origin is the
// approver's, that the authenticator data names the approver's relying
// party with the user present and verified, and that the signature verifies.
// It does not look at whether the approver was removed, or at what the
// statement says: the caller compares those with what it decides.
func VerifyDecision(approver EnrolledApprover, sig DecisionSignature) error {
	fail := func(format string, args ...any) error {
		return &SignatureError{ApprovalID: sig.Statement.ApprovalID, ApproverID: sig.ApproverID, Reason: fmt.Sprintf(format, args...)}
	}
	if approver.DecodeError != "" {
		return fail("the approver's stored row will not decode: %s", approver.DecodeError)
	}
	if sig.ApproverID != approver.ID || sig.CredentialID != approver.CredentialID {
		return fail("the signature names approver %q credential %q, not %q's enrolled key", sig.ApproverID, sig.CredentialID, approver.Name)
	}
	pub, alg, err := ParsePublicKey(approver.PublicKey)
	if err != nil {
		return fail("%v", err)
	}
	if alg != approver.Algorithm || sig.Algorithm != alg {
		return fail("the signature is %s, the enrolled key %s", sig.Algorithm, alg)
	}
	msg, err := sig.Statement.Canonical()
	if err != nil {
		return fail("the statement has no canonical form: %v", err)
	}
	var signed []byte
	switch approver.Kind {
	case ApproverKeyFile:
		if len(sig.AuthenticatorData) != 0 || len(sig.ClientDataJSON) != 0 {
			return fail("a key file signs the statement alone")
		}
		signed = msg
	case ApproverPasskey:
		var cd clientData
		if err := json.Unmarshal(sig.ClientDataJSON, &cd); err != nil {
			return fail("the client data is not JSON")
		}
		challenge := sha256.Sum256(msg)
		if cd.Type != "webauthn.get" {
			return fail("the client data is a %q, not an assertion", cd.Type)
		}
		if cd.Challenge != base64.RawURLEncoding.EncodeToString(challenge[:]) {
			return fail("the assertion's challenge is not this statement's")
		}
		if cd.Origin != approver.Origin {
			return fail("the assertion was made at %q, not at the enrolled origin %q", cd.Origin, approver.Origin)
		}
		ad := sig.AuthenticatorData
		if len(ad) < 37 {
			return fail("the authenticator data is %d bytes, shorter than any assertion's", len(ad))
		}
		rp := sha256.Sum256([]byte(approver.RPID))
		if !bytes.Equal(ad[:32], rp[:]) {
			return fail("the authenticator data is for another relying party than %q", approver.RPID)
		}
		if ad[32]&flagUserPresent == 0 || ad[32]&flagUserVerified == 0 {
			return fail("the authenticator did not report the user present and verified")
		}
		cdh := sha256.Sum256(sig.ClientDataJSON)
		signed = append(append(make([]byte, 0, len(ad)+32), ad...), cdh[:]...)
	default:
		return fail("the approver's kind %q is unknown", approver.Kind)
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		d := sha256.Sum256(signed)
		if !ecdsa.VerifyASN1(k, d[:], sig.Signature) {
			return fail("the signature does not verify")
		}
	case ed25519.PublicKey:
		if !ed25519.Verify(k, signed, sig.Signature) {
			return fail("the signature does not verify")
		}
	}
	return nil
}

// checkStatement compares what a signed statement says with the decision
// being made.
func checkStatement(sig DecisionSignature, runID, approvalID, hash, decision, note string) error {
	st := sig.Statement
	for _, f := range []struct{ field, got, want string }{
		{"run_id", st.RunID, runID}, {"approval_id", st.ApprovalID, approvalID}, {"approval_hash", st.ApprovalHash, hash},
		{"decision", st.Decision, decision}, {"note", st.Note, note},
	} {
		if f.got != f.want {
			return &SignatureError{ApprovalID: approvalID, ApproverID: sig.ApproverID,
				Reason: fmt.Sprintf("the signed statement's %s is %q, not %q", f.field, f.got, f.want)}
		}
	}
	if st.Nonce == "" {
		return &SignatureError{ApprovalID: approvalID, ApproverID: sig.ApproverID, Reason: "the signed statement has no nonce"}
	}
	return nil
}
