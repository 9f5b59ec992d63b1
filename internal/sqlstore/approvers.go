package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

var (
	approverCols = textCols(colWhole, "id", "name", "kind", "algorithm", "credential_id", "public_key", "rp_id", "origin",
		"enrolled_at", "enrolled_by", "removed_at", "removed_by", "access_json")
	approverAt     = colIndex(approverCols)
	selectApprover = "SELECT " + selectCols(approverCols) + " FROM approvers"

	inviteCols = textCols(colWhole, "id", "token_hash", "name", "created_at", "created_by", "expires_at", "used_at", "approver_id")
	inviteAt   = colIndex(inviteCols)
)

func scanApprover(s scanner) (agentrt.EnrolledApprover, error) {
	r, err := scanOne(s, approverCols, approverAt, "approver")
	if err != nil {
		return agentrt.EnrolledApprover{}, err
	}
	a := agentrt.EnrolledApprover{ID: r.str("id"), Name: r.str("name"), Kind: agentrt.ApproverKind(r.str("kind")),
		Algorithm: r.str("algorithm"), CredentialID: r.str("credential_id"), RPID: r.str("rp_id"), Origin: r.str("origin"),
		EnrolledAt: r.time("enrolled_at"), EnrolledBy: r.str("enrolled_by"), RemovedAt: r.time("removed_at"), RemovedBy: r.str("removed_by")}
	if k, err := base64.StdEncoding.DecodeString(r.str("public_key")); err != nil {
		r.note("public_key: not base64")
	} else {
		a.PublicKey = k
	}
	if ac := r.str("access_json"); ac != "" {
		var access agentrt.ApproverAccess
		if err := json.Unmarshal([]byte(ac), &access); err != nil {
			r.note("access: %v", err)
		} else {
			a.Roles, a.Scope = access.Roles, access.Scope
		}
	}
	a.DecodeError = r.decodeError()
	return a, nil
}

func (t *tx) ApproverInsert(a agentrt.EnrolledApprover) error {
	_, err := t.exec(`INSERT INTO approvers (id, name, kind, algorithm, credential_id, public_key, rp_id, origin,
		enrolled_at, enrolled_by, removed_at, removed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.Name, string(a.Kind), a.Algorithm, a.CredentialID, base64.StdEncoding.EncodeToString(a.PublicKey), a.RPID, a.Origin,
		t.timeText(a.EnrolledAt), a.EnrolledBy, t.timeText(a.RemovedAt), a.RemovedBy)
	if err != nil && isConstraint(err) {
		return fmt.Errorf("%w: an unremoved approver is named %q, or its key is enrolled already", agentrt.ErrApproverExists, a.Name)
	}
	return err
}

func (t *tx) ApproverGet(id string) (agentrt.EnrolledApprover, error) {
	a, err := scanApprover(t.queryRow(selectApprover+" WHERE id = ?", id))
	return notFoundAs(a, err, "approver %s", id)
}

func (t *tx) ApproverByName(name string) (agentrt.EnrolledApprover, error) {
	a, err := scanApprover(t.queryRow(selectApprover+" WHERE name = ? AND removed_at = ''", name))
	return notFoundAs(a, err, "no enrolled approver is named %q", name)
}

func (t *tx) ApproverRemove(p agentrt.ApproverRemove) error {
	res, err := t.exec(`UPDATE approvers SET removed_at = ?, removed_by = ? WHERE id = ? AND removed_at = ''`,
		t.timeText(p.RemovedAt), p.RemovedBy, p.ID)
	if err != nil {
		return err
	}
	return oneRow(res, "approver", p.ID)
}

func (t *tx) InviteInsert(i agentrt.ApproverInvite) error {
	_, err := t.exec(`INSERT INTO approver_invites (id, token_hash, name, created_at, created_by, expires_at, used_at, approver_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		i.ID, i.TokenHash, i.Name, t.timeText(i.CreatedAt), i.CreatedBy, t.timeText(i.ExpiresAt), t.timeText(i.UsedAt), i.ApproverID)
	return err
}

func (t *tx) InviteGet(tokenHash string) (agentrt.ApproverInvite, error) {
	r := newRow(inviteCols, inviteAt)
	err := r.scan(t.queryRow("SELECT "+selectCols(inviteCols)+" FROM approver_invites WHERE token_hash = ?", tokenHash))
	if errors.Is(err, sql.ErrNoRows) {
		return agentrt.ApproverInvite{}, fmt.Errorf("%w: no such invitation", agentrt.ErrInvite)
	}
	if err != nil {
		return agentrt.ApproverInvite{}, err
	}
	i := agentrt.ApproverInvite{ID: r.str("id"), TokenHash: r.str("token_hash"), Name: r.str("name"), CreatedAt: r.time("created_at"),
		CreatedBy: r.str("created_by"), ExpiresAt: r.time("expires_at"), UsedAt: r.time("used_at"), ApproverID: r.str("approver_id")}
	if d := r.decodeError(); d != "" {
		return agentrt.ApproverInvite{}, fmt.Errorf("%w: the invitation's row will not decode: %s", agentrt.ErrInvite, d)
	}
	return i, nil
}

func (t *tx) InviteUse(p agentrt.InviteUse) error {
	res, err := t.exec(`UPDATE approver_invites SET used_at = ?, approver_id = ? WHERE id = ? AND used_at = ''`,
		t.timeText(p.UsedAt), p.ApproverID, p.ID)
	if err != nil {
		return err
	}
	return oneRow(res, "invitation", p.ID)
}

// ListApprovers reads every approver in enrollment order.
func (s *Store) ListApprovers(ctx context.Context) ([]agentrt.EnrolledApprover, error) {
	rows, err := s.rdb.QueryContext(ctx, selectApprover+" ORDER BY rowid")
	return scanRows(rows, err, scanApprover)
}

// GetApprover reads one approver.
func (s *Store) GetApprover(ctx context.Context, id string) (agentrt.EnrolledApprover, error) {
	a, err := scanApprover(s.rdb.QueryRowContext(ctx, s.d.Rebind(selectApprover+" WHERE id = ?"), id))
	return notFoundAs(a, err, "approver %s", id)
}

func (t *tx) ApproverSetAccess(p agentrt.ApproverSetAccess) error {
	ac, err := encodeJSON(p.Access)
	if err != nil {
		return err
	}
	res, err := t.exec(`UPDATE approvers SET access_json = ? WHERE id = ? AND removed_at = ''`, ac, p.ID)
	if err != nil {
		return err
	}
	return oneRow(res, "approver", p.ID)
}

func (t *tx) ApproverList() ([]agentrt.EnrolledApprover, error) {
	rows, err := t.query(selectApprover + " ORDER BY rowid")
	return scanRows(rows, err, scanApprover)
}

func (t *tx) VoteInsert(v agentrt.Vote) error {
	sig := ""
	if v.Signature != nil {
		var err error
		if sig, err = encodeJSON(v.Signature); err != nil {
			return err
		}
	}
	_, err := t.exec(`INSERT INTO approval_votes (approval_id, run_id, approver_id, approver_name, stage, decision, note, at, signature_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, v.ApprovalID, v.RunID, v.ApproverID, v.ApproverName, v.Stage, v.Decision, v.Note,
		t.timeText(v.At), sig)
	if err != nil && isConstraint(err) {
		return fmt.Errorf("%w: approver %s on approval %s", agentrt.ErrAlreadyVoted, v.ApproverID, v.ApprovalID)
	}
	return err
}

func (t *tx) VoteList(approvalID string) ([]agentrt.Vote, error) {
	rows, err := t.query(`SELECT approval_id, run_id, approver_id, approver_name, stage, decision, note, at, signature_json
		FROM approval_votes WHERE approval_id = ? ORDER BY rowid`, approvalID)
	return scanRows(rows, err, func(sc scanner) (agentrt.Vote, error) {
		var v agentrt.Vote
		var at, sig string
		if err := sc.Scan(&v.ApprovalID, &v.RunID, &v.ApproverID, &v.ApproverName, &v.Stage, &v.Decision, &v.Note, &at, &sig); err != nil {
			return v, err
		}
		v.At, _ = parseTime(at)
		if sig != "" {
			v.Signature = new(agentrt.DecisionSignature)
			if err := json.Unmarshal([]byte(sig), v.Signature); err != nil {
				v.Signature = nil
			}
		}
		return v, nil
	})
}
