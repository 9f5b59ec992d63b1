package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/token"
)

// InviteTTL is how long an enrollment invitation stays usable.
const InviteTTL = 15 * time.Minute

// MaxStatementAge bounds how old a signed statement may be when its
// decision is recorded, and MaxStatementSkew how far in the future: a
// signature captured and replayed later, or made on a wrong clock, is
// refused.
const (
	MaxStatementAge  = 15 * time.Minute
	MaxStatementSkew = time.Minute
)

// maxApproverName bounds an approver's name in bytes.
const maxApproverName = 128

// CheckApproverName refuses a name that is empty, longer than 128 bytes,
// not UTF-8, or holds a control, format or space character other than a
// plain space inside it: a name is shown to people deciding whom to trust.
func CheckApproverName(name string) error {
	bad := func(why string) error { return &ConfigError{Field: "approver name", Reason: why} }
	switch {
	case name == "":
		return bad("must not be empty")
	case len(name) > maxApproverName:
		return bad(fmt.Sprintf("is %d bytes; at most %d", len(name), maxApproverName))
	case !utf8.ValidString(name):
		return bad("is not UTF-8")
	case strings.TrimSpace(name) != name:
		return bad("must not start or end with a space")
	}
	for _, r := range name {
		if r != ' ' && (r < 0x21 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 ||
			(r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0xfeff) {
			return bad(fmt.Sprintf("holds the character %U, which could mislead whoever reads it", r))
		}
	}
	return nil
}

// NewApprover is what EnrollApprover records.
type NewApprover struct {
	// ID is the approver's id; empty makes a random one. A passkey's
	// WebAuthn user handle is its approver's id, so the console picks it
	// before the ceremony.
	ID   string
	Name string
	Kind ApproverKind
	// PublicKey is PKIX DER: P-256 ECDSA or ed25519 for a passkey,
	// ed25519 for a key file.
	PublicKey []byte
	// CredentialID is a passkey's credential id (base64url); a key file's
	// is its KeyFingerprint, filled in when empty.
	CredentialID string
	// RPID and Origin, for a passkey: its relying party and origin.
	RPID, Origin string
	// By names who enrolled the approver, recorded as given.
	By string
	// Access is the approver's roles and scope; when set, enrolling also
	// records approver.access_set, in the same transaction.
	Access ApproverAccess
}

func (n *NewApprover) check() error {
	if err := CheckApproverName(n.Name); err != nil {
		return err
	}
	if len(n.ID) > 64 || strings.IndexFunc(n.ID, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
	}) >= 0 {
		return &ConfigError{Field: "NewApprover.ID", Reason: "must be at most 64 letters, digits, - or _"}
	}
	if n.By == "" {
		return &ConfigError{Field: "NewApprover.By", Reason: "must name who enrolls the approver"}
	}
	if err := n.Access.check(); err != nil {
		return err
	}
	_, alg, err := ParsePublicKey(n.PublicKey)
	if err != nil {
		return err
	}
	switch n.Kind {
	case ApproverKeyFile:
		if alg != AlgEdDSA {
			return &ConfigError{Field: "NewApprover.PublicKey", Reason: "a key file must hold an ed25519 key"}
		}
		if fp := KeyFingerprint(n.PublicKey); n.CredentialID == "" {
			n.CredentialID = fp
		} else if n.CredentialID != fp {
			return &ConfigError{Field: "NewApprover.CredentialID", Reason: "a key file's credential id is its fingerprint, " + fp}
		}
		if n.RPID != "" || n.Origin != "" {
			return &ConfigError{Field: "NewApprover.RPID", Reason: "a key file has no relying party"}
		}
	case ApproverPasskey:
		if n.CredentialID == "" || n.RPID == "" || n.Origin == "" {
			return &ConfigError{Field: "NewApprover", Reason: "a passkey needs its credential id, relying party id and origin"}
		}
	default:
		return &ConfigError{Field: "NewApprover.Kind", Reason: fmt.Sprintf("%q is not an approver kind", n.Kind)}
	}
	return nil
}

// newToken is an invitation token: 256 random bits.
func newToken() string { return token.URL(32) }

// TokenHash is how an invitation token is stored: its hex SHA-256.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewNonce returns a random nonce for a statement.
func NewNonce() string { return token.URL(16) }

func approverRemoved(a EnrolledApprover, by string) ApproverRemovedPayload {
	return ApproverRemovedPayload{ApproverID: a.ID, Name: a.Name, By: by}
}

// enrollTx inserts the approver and its approver.enrolled event.
func enrollTx(tx Tx, n NewApprover, id string, now time.Time, inviteID string) (EnrolledApprover, error) {
	_, alg, err := ParsePublicKey(n.PublicKey)
	if err != nil {
		return EnrolledApprover{}, err
	}
	a := EnrolledApprover{ID: id, Name: n.Name, Kind: n.Kind, Algorithm: alg, CredentialID: n.CredentialID, PublicKey: n.PublicKey,
		RPID: n.RPID, Origin: n.Origin, EnrolledAt: now, EnrolledBy: n.By}
	if err := tx.ApproverInsert(a); err != nil {
		return EnrolledApprover{}, err
	}
	p := ApproverEnrolledPayload{ApproverID: a.ID, Name: a.Name, By: n.By, Kind: string(a.Kind), Algorithm: alg,
		CredentialID: a.CredentialID, PublicKey: base64.StdEncoding.EncodeToString(a.PublicKey), RPID: a.RPID,
		Origin: a.Origin, InviteID: inviteID}
	if err := event(tx, "", "", now, EventApproverEnrolled, p); err != nil {
		return EnrolledApprover{}, err
	}
	if len(n.Access.Roles) == 0 && n.Access.Scope.empty() {
		return a, nil
	}
	a.Roles, a.Scope = n.Access.Roles, n.Access.Scope
	return a, setAccessTx(tx, a, n.By, now)
}

// idOrNew is the id n asks for, or a new random one.
func (n NewApprover) idOrNew() string {
	if n.ID != "" {
		return n.ID
	}
	return newRandomID()
}

// EnrollApprover enrolls an approver directly, as 'agentrt approvers add'
// does: anyone who can write the database can, and the approver.enrolled
// event names who did.
func (o Operator) EnrollApprover(ctx context.Context, n NewApprover) (EnrolledApprover, error) {
	if err := n.check(); err != nil {
		return EnrolledApprover{}, err
	}
	now := o.now()
	id := n.idOrNew()
	var a EnrolledApprover
	err := o.write(ctx, func(tx Tx) error {
		var err error
		a, err = enrollTx(tx, n, id, now, "")
		return err
	})
	return a, err
}

// RemoveApprover removes the unremoved approver with the name: it signs
// nothing more, and what it signed before still verifies.
func (o Operator) RemoveApprover(ctx context.Context, name, by string) (EnrolledApprover, error) {
	if by == "" {
		return EnrolledApprover{}, &ConfigError{Field: "by", Reason: "must name who removes the approver"}
	}
	return o.changeApprover(ctx, name, func(tx Tx, a *EnrolledApprover, now time.Time) error {
		if err := tx.ApproverRemove(ApproverRemove{ID: a.ID, RemovedAt: now, RemovedBy: by}); err != nil {
			return err
		}
		a.RemovedAt, a.RemovedBy = now, by
		return event(tx, "", "", now, EventApproverRemoved, approverRemoved(*a, by))
	})
}

// changeApprover runs change on the unremoved approver with the name in
// one transaction, at one now, and returns the approver as change left it.
func (o Operator) changeApprover(ctx context.Context, name string, change func(tx Tx, a *EnrolledApprover, now time.Time) error) (EnrolledApprover, error) {
	return changeRow(ctx, o, func(tx Tx) (EnrolledApprover, error) { return tx.ApproverByName(name) }, change)
}

// InviteApprover records a one-time invitation to enroll a passkey under
// name, usable for InviteTTL, and returns its token; only the token's hash
// is stored. The approver.invited event names who invited.
func (o Operator) InviteApprover(ctx context.Context, name, by string) (string, ApproverInvite, error) {
	if err := CheckApproverName(name); err != nil {
		return "", ApproverInvite{}, err
	}
	if by == "" {
		return "", ApproverInvite{}, &ConfigError{Field: "by", Reason: "must name who invites the approver"}
	}
	now := o.now()
	token := newToken()
	inv := ApproverInvite{ID: newRandomID(), TokenHash: TokenHash(token), Name: name, CreatedAt: now, CreatedBy: by, ExpiresAt: now.Add(InviteTTL)}
	err := o.write(ctx, func(tx Tx) error {
		if _, err := tx.ApproverByName(name); err == nil {
			return fmt.Errorf("%w: an unremoved approver is named %q", ErrApproverExists, name)
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := tx.InviteInsert(inv); err != nil {
			return err
		}
		return event(tx, "", "", now, EventApproverInvited, ApproverInvitedPayload{InviteID: inv.ID, Name: name, By: by,
			ExpiresAt: inv.ExpiresAt.Format(time.RFC3339Nano)})
	})
	if err != nil {
		return "", ApproverInvite{}, err
	}
	return token, inv, nil
}

// CheckInvite reads the invitation a token names and refuses one unknown,
// used or expired (ErrInvite). It writes nothing: the console calls it
// before the ceremony, and EnrollInvited checks again as it enrolls.
func CheckInvite(ctx context.Context, store Store, token string, now time.Time) (ApproverInvite, error) {
	var inv ApproverInvite
	_, err := store.Update(ctx, func(tx Tx) error {
		var err error
		inv, err = inviteUsable(tx, token, now)
		return err
	})
	return inv, err
}

func inviteUsable(tx Tx, token string, now time.Time) (ApproverInvite, error) {
	inv, err := tx.InviteGet(TokenHash(token))
	if err != nil {
		return ApproverInvite{}, err
	}
	if !inv.UsedAt.IsZero() {
		return ApproverInvite{}, fmt.Errorf("%w: it was used at %s", ErrInvite, inv.UsedAt.Format(time.RFC3339))
	}
	if !now.Before(inv.ExpiresAt) {
		return ApproverInvite{}, fmt.Errorf("%w: it expired at %s", ErrInvite, inv.ExpiresAt.Format(time.RFC3339))
	}
	return inv, nil
}

// EnrollInvited uses the invitation token names, once, to enroll the
// approver n under the invitation's name, in one transaction: the
// approver.enrolled event names the inviter as the enroller and the
// invitation. n.Name must be the invitation's, and n.By is ignored.
func (o Operator) EnrollInvited(ctx context.Context, token string, n NewApprover) (EnrolledApprover, error) {
	now := o.now()
	id := n.idOrNew()
	var a EnrolledApprover
	err := o.write(ctx, func(tx Tx) error {
		inv, err := inviteUsable(tx, token, now)
		if err != nil {
			return err
		}
		n.Name, n.By = inv.Name, inv.CreatedBy
		if err := n.check(); err != nil {
			return err
		}
		if a, err = enrollTx(tx, n, id, now, inv.ID); err != nil {
			return err
		}
		if err := tx.InviteUse(InviteUse{ID: inv.ID, UsedAt: now, ApproverID: id}); err != nil {
			return fmt.Errorf("%w: it was used while enrolling", ErrInvite)
		}
		return nil
	})
	return a, err
}

// DecideOption changes how ApproveShown and RejectShown decide.
type DecideOption func(*decideOptions)

type decideOptions struct {
	sig *DecisionSignature
}

// WithSignature records the decision as signed by an enrolled approver.
// The statement must name the run, the approval, the hash shown, the
// decision and the note being recorded, be at most MaxStatementAge old,
// and verify with the approver's enrolled key (VerifyDecision); the
// approver must not be removed. DecidedBy is then the approver's enrolled
// name: the by argument must be empty or that name.
func WithSignature(sig DecisionSignature) DecideOption {
	return func(o *decideOptions) { s := sig; o.sig = &s }
}

// signedBy checks a signature inside the deciding transaction and returns
// the approver that made it.
func signedBy(tx Tx, sig *DecisionSignature, runID, approvalID, hash string, approve bool, by, note string, now time.Time) (EnrolledApprover, error) {
	verb := StatementReject
	if approve {
		verb = StatementApprove
	}
	if err := checkStatement(*sig, runID, approvalID, hash, verb, note); err != nil {
		return EnrolledApprover{}, err
	}
	fail := func(format string, args ...any) error {
		return &SignatureError{ApprovalID: approvalID, ApproverID: sig.ApproverID, Reason: fmt.Sprintf(format, args...)}
	}
	if t := sig.Statement.Time; t.Before(now.Add(-MaxStatementAge)) || t.After(now.Add(MaxStatementSkew)) {
		return EnrolledApprover{}, fail("the statement was signed at %s, not within %s of now", t.UTC().Format(time.RFC3339), MaxStatementAge)
	}
	ap, err := tx.ApproverGet(sig.ApproverID)
	if errors.Is(err, ErrNotFound) {
		return EnrolledApprover{}, fail("no approver %s is enrolled", sig.ApproverID)
	}
	if err != nil {
		return EnrolledApprover{}, err
	}
	if ap.Removed() {
		return EnrolledApprover{}, fail("approver %q was removed at %s", ap.Name, ap.RemovedAt.Format(time.RFC3339))
	}
	if by != "" && by != ap.Name {
		return EnrolledApprover{}, fail("the decision names %q, but the signature is %q's", by, ap.Name)
	}
	if err := VerifyDecision(ap, *sig); err != nil {
		return EnrolledApprover{}, err
	}
	return ap, nil
}
