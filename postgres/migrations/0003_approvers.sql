-- agentrt schema version 3 for PostgreSQL, mirroring
-- sqlite/migrations/0003: authenticated approvers, one-time enrollment
-- invitations (only the SHA-256 of a token is kept), the signature of a
-- signed decision on its approval, and the inbox index. Enrolling and
-- removing an approver are events of no run (run_id ''), so events drops
-- its reference to runs; Postgres does that in place, and chain_head keeps
-- the highest seq ever used as before.
CREATE TABLE approvers (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	kind TEXT NOT NULL,
	algorithm TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	public_key TEXT NOT NULL,
	rp_id TEXT NOT NULL DEFAULT '',
	origin TEXT NOT NULL DEFAULT '',
	enrolled_at TEXT NOT NULL,
	enrolled_by TEXT NOT NULL,
	removed_at TEXT NOT NULL DEFAULT '',
	removed_by TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX approvers_credential ON approvers (credential_id);
CREATE UNIQUE INDEX approvers_active_name ON approvers (name) WHERE removed_at = '';

CREATE TABLE approver_invites (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	name TEXT NOT NULL,
	created_at TEXT NOT NULL,
	created_by TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	used_at TEXT NOT NULL DEFAULT '',
	approver_id TEXT NOT NULL DEFAULT ''
);

ALTER TABLE approvals
	ADD COLUMN approver_id TEXT NOT NULL DEFAULT '',
	ADD COLUMN credential_id TEXT NOT NULL DEFAULT '',
	ADD COLUMN signature_json TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_waiting ON approvals (status, created_at);

ALTER TABLE events DROP CONSTRAINT events_run_id_fkey;
