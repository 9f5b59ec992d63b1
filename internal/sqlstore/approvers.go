package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

var (
	approverCols = textCols(colWhole, "id", "name", "kind", "algorithm", "credential_id", "public_key", "rp_id", "origin",
		"enrolled_at", "enrolled_by", "removed_at", "removed_by")
	approverAt     = colIndex(approverCols)
	selectApprover = "SELECT " + selectCols(approverCols) + " FROM approvers"

	inviteCols = textCols(colWhole, "id", "token_hash", "name", "created_at", "created_by", "expires_at", "used_at", "approver_id")
	inviteAt   = colIndex(inviteCols)
)

func scanApprover(s scanner) (agentrt.EnrolledApprover, error) {
	r := newRow(approverCols, approverAt)
	err := r.scan(s)
	if errors.Is(err, sql.ErrNoRows) {
		return agentrt.EnrolledApprover{}, fmt.Errorf("%w: approver", agentrt.ErrNotFound)
	}
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
	a.DecodeError = r.decodeError()
	return a, nil
}

func scanApprovers(rows *sql.Rows) ([]agentrt.EnrolledApprover, error) {
	defer rows.Close()
	var out []agentrt.EnrolledApprover
	for rows.Next() {
		a, err := scanApprover(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
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
	if errors.Is(err, agentrt.ErrNotFound) {
		return a, fmt.Errorf("%w: approver %s", agentrt.ErrNotFound, id)
	}
	return a, err
}

func (t *tx) ApproverByName(name string) (agentrt.EnrolledApprover, error) {
	a, err := scanApprover(t.queryRow(selectApprover+" WHERE name = ? AND removed_at = ''", name))
	if errors.Is(err, agentrt.ErrNotFound) {
		return a, fmt.Errorf("%w: no enrolled approver is named %q", agentrt.ErrNotFound, name)
	}
	return a, err
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
	if err != nil {
		return nil, err
	}
	return scanApprovers(rows)
}

// GetApprover reads one approver.
func (s *Store) GetApprover(ctx context.Context, id string) (agentrt.EnrolledApprover, error) {
	a, err := scanApprover(s.rdb.QueryRowContext(ctx, s.d.Rebind(selectApprover+" WHERE id = ?"), id))
	if errors.Is(err, agentrt.ErrNotFound) {
		return a, fmt.Errorf("%w: approver %s", agentrt.ErrNotFound, id)
	}
	return a, err
}
