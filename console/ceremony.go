package console

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/token"
	"github.com/agentrt/agentrt/trace"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/go-webauthn/webauthn/webauthn"
)

// ceremonyTTL bounds how long a begun ceremony may wait to be finished.
const ceremonyTTL = 2 * time.Minute

// user is an approver (or an invited one) as the WebAuthn library sees it.
type user struct {
	handle []byte
	name   string
	creds  []webauthn.Credential
}

func (u *user) WebAuthnID() []byte                         { return u.handle }
func (u *user) WebAuthnName() string                       { return u.name }
func (u *user) WebAuthnDisplayName() string                { return u.name }
func (u *user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

func (h *Handler) putCeremony(c *ceremony) string {
	id := randomToken()
	now := h.now()
	c.expires = now.Add(ceremonyTTL)
	h.mu.Lock()
	h.ceremonies.put(id, c, now)
	h.mu.Unlock()
	return id
}

// takeCeremony removes and returns the ceremony the request names: each
// is finished at most once.
func (h *Handler) takeCeremony(r *http.Request, kind string) (*ceremony, error) {
	id := r.Header.Get("X-Ceremony")
	h.mu.Lock()
	c := h.ceremonies.take(id)
	h.mu.Unlock()
	if c == nil || c.kind != kind || h.now().After(c.expires) {
		return nil, errors.New("no such ceremony, or it expired: start again")
	}
	return c, nil
}

// credentialOf is an enrolled passkey as the library verifies it: its
// public key back in COSE form.
func credentialOf(a agentrt.EnrolledApprover) (webauthn.Credential, error) {
	id, err := base64.RawURLEncoding.DecodeString(a.CredentialID)
	if err != nil {
		return webauthn.Credential{}, err
	}
	k, err := x509.ParsePKIXPublicKey(a.PublicKey)
	if err != nil {
		return webauthn.Credential{}, err
	}
	var cose []byte
	switch pk := k.(type) {
	case *ecdsa.PublicKey:
		raw, berr := pk.Bytes() // 0x04 || X || Y
		if berr != nil || len(raw) != 65 {
			return webauthn.Credential{}, fmt.Errorf("the enrolled key is not an uncompressed P-256 point")
		}
		x, y := raw[1:33], raw[33:]
		cose, err = webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
			PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
			Curve:         int64(webauthncose.P256), XCoord: x, YCoord: y})
	case ed25519.PublicKey:
		cose, err = webauthncbor.Marshal(webauthncose.OKPPublicKeyData{
			PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.OctetKey), Algorithm: int64(webauthncose.AlgEdDSA)},
			Curve:         int64(webauthncose.Ed25519), XCoord: []byte(pk)})
	default:
		err = fmt.Errorf("unsupported key %T", k)
	}
	return webauthn.Credential{ID: id, PublicKey: cose}, err
}

// pkixOf turns a registered credential's COSE key into PKIX DER, the form
// the core stores and verifies with the standard library.
func pkixOf(cose []byte) ([]byte, error) {
	k, err := webauthncose.ParsePublicKey(cose)
	if err != nil {
		return nil, err
	}
	switch pk := k.(type) {
	case webauthncose.EC2PublicKeyData:
		if pk.Algorithm != int64(webauthncose.AlgES256) || pk.Curve != int64(webauthncose.P256) {
			return nil, errors.New("only ES256 (P-256) and EdDSA passkeys are enrolled")
		}
		if len(pk.XCoord) != 32 || len(pk.YCoord) != 32 {
			return nil, errors.New("a P-256 key's coordinates are 32 bytes each")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, pk.XCoord...), pk.YCoord...))
		if err != nil {
			return nil, err
		}
		return x509.MarshalPKIXPublicKey(pub)
	case webauthncose.OKPPublicKeyData:
		if len(pk.XCoord) != ed25519.PublicKeySize {
			return nil, errors.New("an EdDSA key must be ed25519")
		}
		return x509.MarshalPKIXPublicKey(ed25519.PublicKey(pk.XCoord))
	}
	return nil, fmt.Errorf("only ES256 (P-256) and EdDSA passkeys are enrolled, not %T", k)
}

var credentialParams = []protocol.CredentialParameter{
	{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgES256},
	{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgEdDSA},
}

func (h *Handler) enrollBegin(w http.ResponseWriter, r *http.Request, _ *session) {
	var in struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Token == "" {
		apiError(w, http.StatusBadRequest, CodeBadRequest, "the request needs the invitation's token")
		return
	}
	inv, err := agentrt.CheckInvite(r.Context(), h.cfg.Store, in.Token, h.now())
	if err != nil {
		apiError(w, http.StatusForbidden, CodeInvite, "this invitation is unknown, used or expired; ask for a new one")
		return
	}
	// The user handle is the approver's id, chosen now, so that a decision
	// later names the same user as the passkey does.
	u := &user{handle: []byte(token.Hex(16)), name: inv.Name}
	opts, data, err := h.wa.BeginRegistration(u, webauthn.WithCredentialParameters(credentialParams),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired))
	if err != nil {
		h.internal(w, "beginning an enrollment", err)
		return
	}
	id := h.putCeremony(&ceremony{kind: "enroll", data: *data, token: in.Token, handle: u.handle})
	writeJSON(w, map[string]any{"ceremony": id, "name": inv.Name, "options": opts})
}

func (h *Handler) enrollFinish(w http.ResponseWriter, r *http.Request, _ *session) {
	c, err := h.takeCeremony(r, "enroll")
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeBadRequest, "the body is too large")
		return
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(body)
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeBadRequest, "the credential does not parse")
		return
	}
	cred, err := h.wa.CreateCredential(&user{handle: c.handle}, c.data, parsed)
	if err != nil {
		h.logf("enrollment refused a passkey: %v", err)
		apiError(w, http.StatusForbidden, CodeSignature, "the passkey was not accepted; start again")
		return
	}
	der, err := pkixOf(cred.PublicKey)
	if err != nil {
		h.logf("enrollment refused a passkey's key: %v", err)
		apiError(w, http.StatusBadRequest, CodeBadRequest, "only ES256 (P-256) and EdDSA passkeys are enrolled")
		return
	}
	ap, err := h.op.EnrollInvited(r.Context(), c.token, agentrt.NewApprover{ID: string(c.handle), Kind: agentrt.ApproverPasskey, PublicKey: der,
		CredentialID: base64.RawURLEncoding.EncodeToString(cred.ID), RPID: h.rpID, Origin: h.cfg.Origin})
	if err != nil {
		code := CodeInternal
		if errors.Is(err, agentrt.ErrInvite) || errors.Is(err, agentrt.ErrApproverExists) {
			code = CodeInvite
		}
		h.logf("enrolling an invited approver failed: %v", err)
		msg := "the enrollment failed"
		if code == CodeInvite {
			msg = "this invitation is unknown, used or expired, or the name is taken; ask for a new one"
		}
		apiError(w, http.StatusForbidden, code, msg)
		return
	}
	h.newSession(w, ap)
	writeJSON(w, map[string]string{"name": ap.Name, "next": "/"})
}

func (h *Handler) loginBegin(w http.ResponseWriter, r *http.Request, _ *session) {
	opts, data, err := h.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		h.internal(w, "beginning a sign-in", err)
		return
	}
	writeJSON(w, map[string]any{"ceremony": h.putCeremony(&ceremony{kind: "login", data: *data}), "options": opts})
}

// approverByCredential finds the unremoved approver enrolled with a
// passkey's credential id.
func (h *Handler) approverByCredential(r *http.Request, rawID []byte) (agentrt.EnrolledApprover, error) {
	aps, err := h.cfg.Store.ListApprovers(r.Context())
	if err != nil {
		return agentrt.EnrolledApprover{}, err
	}
	want := base64.RawURLEncoding.EncodeToString(rawID)
	for _, a := range aps {
		if a.Kind == agentrt.ApproverPasskey && a.CredentialID == want && !a.Removed() && a.DecodeError == "" {
			return a, nil
		}
	}
	return agentrt.EnrolledApprover{}, errors.New("this passkey is not enrolled, or its approver was removed")
}

func (h *Handler) loginFinish(w http.ResponseWriter, r *http.Request, _ *session) {
	c, err := h.takeCeremony(r, "login")
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	var found agentrt.EnrolledApprover
	_, err = h.wa.FinishDiscoverableLogin(func(rawID, handle []byte) (webauthn.User, error) {
		a, err := h.approverByCredential(r, rawID)
		if err != nil {
			return nil, err
		}
		cred, err := credentialOf(a)
		if err != nil {
			return nil, err
		}
		found = a
		return &user{handle: handle, name: a.Name, creds: []webauthn.Credential{cred}}, nil
	}, c.data, r)
	if err != nil {
		// The library's reason (and whether the credential is enrolled)
		// is the server's to know, not the client's.
		h.logf("a sign-in was refused: %v", err)
		apiError(w, http.StatusForbidden, CodeUnauthorized, "the passkey did not sign in")
		return
	}
	h.newSession(w, found)
	writeJSON(w, map[string]string{"name": found.Name, "next": "/"})
}

// decideBegin makes the statement of the decision the page asks for, with
// a fresh nonce and the time, and asks the approver's passkey to sign it:
// the assertion's challenge is the statement's SHA-256.
func (h *Handler) decideBegin(w http.ResponseWriter, r *http.Request, s *session) {
	var in struct {
		RunID      string `json:"run_id"`
		ApprovalID string `json:"approval_id"`
		Hash       string `json:"hash"`
		Decision   string `json:"decision"`
		Note       string `json:"note"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.RunID == "" || in.ApprovalID == "" || in.Hash == "" ||
		(in.Decision != agentrt.StatementApprove && in.Decision != agentrt.StatementReject) || len(in.Note) > 2000 {
		apiError(w, http.StatusBadRequest, CodeBadRequest, "the request needs run_id, approval_id, hash, decision (approve or reject) and a note of at most 2000 bytes")
		return
	}
	ap, err := h.cfg.Store.GetApprover(r.Context(), s.approverID)
	if err != nil || ap.Removed() {
		apiError(w, http.StatusForbidden, CodeUnauthorized, "your approver was removed")
		return
	}
	cred, err := credentialOf(ap)
	if err != nil {
		h.internal(w, "reading an enrolled passkey", err)
		return
	}
	st := agentrt.Statement{RunID: in.RunID, ApprovalID: in.ApprovalID, ApprovalHash: in.Hash, Decision: in.Decision,
		Note: in.Note, Nonce: agentrt.NewNonce(), Time: h.now()}
	challenge, err := st.Challenge()
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	opts, data, err := h.wa.BeginLogin(&user{handle: []byte(ap.ID), name: ap.Name, creds: []webauthn.Credential{cred}},
		webauthn.WithChallenge(challenge), webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		h.internal(w, "beginning a decision", err)
		return
	}
	id := h.putCeremony(&ceremony{kind: "decide", data: *data, session: s.key, statement: st})
	writeJSON(w, map[string]any{"ceremony": id, "statement": st, "options": opts})
}

// decideFinish checks the assertion with the library, then decides through
// ApproveShown or RejectShown with the hash the page showed and the
// signature, which the core verifies again with the standard library.
func (h *Handler) decideFinish(w http.ResponseWriter, r *http.Request, s *session) {
	c, err := h.takeCeremony(r, "decide")
	if err != nil || c.session != s.key {
		apiError(w, http.StatusBadRequest, CodeBadRequest, "no such ceremony for this session, or it expired: start again")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, CodeBadRequest, "the body is too large")
		return
	}
	sig, err := h.verifyAssertion(r, s, c, body)
	if err != nil {
		apiError(w, http.StatusForbidden, CodeSignature, err.Error())
		return
	}
	st := c.statement
	if st.Decision == agentrt.StatementApprove {
		err = h.op.ApproveShown(r.Context(), st.RunID, st.ApprovalID, st.ApprovalHash, "", st.Note, agentrt.WithSignature(sig))
	} else {
		err = h.op.RejectShown(r.Context(), st.RunID, st.ApprovalID, st.ApprovalHash, "", st.Note, agentrt.WithSignature(sig))
	}
	if err != nil {
		status, code := decideStatus(err)
		apiError(w, status, code, err.Error())
		return
	}
	status, remaining := st.Decision, ""
	if a, err := h.cfg.Store.GetApproval(r.Context(), st.RunID, st.ApprovalID); err == nil && a.Status == agentrt.ApprovalPending {
		// A vote that met not every stage: the approval waits for more.
		stages, _ := agentrt.ApprovalStages(r.Context(), h.cfg.Store, a)
		status, remaining = "voted", trace.Sanitize(agentrt.Remaining(stages))
	}
	writeJSON(w, map[string]string{"status": status, "by": s.name, "next": "/runs/" + st.RunID, "remaining": remaining})
}

// verifyAssertion runs the library's assertion checks for the session's
// approver and returns the signature the core records.
func (h *Handler) verifyAssertion(r *http.Request, s *session, c *ceremony, body []byte) (agentrt.DecisionSignature, error) {
	ap, err := h.cfg.Store.GetApprover(r.Context(), s.approverID)
	if err != nil || ap.Removed() {
		return agentrt.DecisionSignature{}, errors.New("your approver was removed")
	}
	cred, err := credentialOf(ap)
	if err != nil {
		return agentrt.DecisionSignature{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return agentrt.DecisionSignature{}, errors.New("the assertion does not parse")
	}
	if !bytes.Equal(parsed.RawID, cred.ID) {
		return agentrt.DecisionSignature{}, errors.New("the assertion is not by your passkey")
	}
	if _, err := h.wa.ValidateLogin(&user{handle: []byte(ap.ID), name: ap.Name, creds: []webauthn.Credential{cred}}, c.data, parsed); err != nil {
		h.logf("a decision's assertion was refused: %v", err)
		return agentrt.DecisionSignature{}, errors.New("the passkey's assertion was not accepted")
	}
	raw := parsed.Raw.AssertionResponse
	return agentrt.DecisionSignature{Statement: c.statement, ApproverID: ap.ID, CredentialID: ap.CredentialID, Algorithm: ap.Algorithm,
		Signature: raw.Signature, AuthenticatorData: raw.AuthenticatorData, ClientDataJSON: raw.ClientDataJSON}, nil
}
