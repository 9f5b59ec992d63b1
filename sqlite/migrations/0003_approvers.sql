-- agentrt schema version 3. Released migrations never change; add a new file.
--
-- Authenticated approvers. An approver is a name and one enrolled public
-- key: a passkey enrolled through the console or an ed25519 key file. The
-- key is stored as base64 of its PKIX (SubjectPublicKeyInfo) DER, so any
-- verifier with a standard library can read it. A removed approver keeps
-- its row, so decisions it signed before its removal still verify; only
-- one unremoved approver may hold a name.
CREATE TABLE approvers (
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

-- One-time enrollment invitations. Only the SHA-256 of the token is kept:
-- whoever reads the database cannot enroll with it.
CREATE TABLE approver_invites (
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	name TEXT NOT NULL,
	created_at TEXT NOT NULL,
	created_by TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	used_at TEXT NOT NULL DEFAULT '',
	approver_id TEXT NOT NULL DEFAULT ''
);

-- A signed decision: who signed it and the signature itself (the statement,
-- and for a passkey the authenticator data and client data it signed).
ALTER TABLE approvals ADD COLUMN approver_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN credential_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN signature_json TEXT NOT NULL DEFAULT '';
-- The inbox: waiting approvals across runs, oldest first.
CREATE INDEX approvals_waiting ON approvals (status, created_at);

-- Enrolling and removing an approver are events in the chain, but belong
-- to no run: they carry run_id ''. So events is rebuilt without the
-- reference to runs, keeping every row and the highest seq ever used (a
-- deleted tail stays a gap the verifier reports).
CREATE TABLE events_v3 (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id TEXT NOT NULL,
	step_id TEXT NOT NULL DEFAULT '',
	at TEXT NOT NULL,
	type TEXT NOT NULL,
	payload_json TEXT NOT NULL,
	hash TEXT NOT NULL
);
INSERT INTO events_v3 (seq, run_id, step_id, at, type, payload_json, hash)
SELECT seq, run_id, step_id, at, type, payload_json, hash FROM events ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'events_v3';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_v3', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
CREATE INDEX events_run ON events (run_id, seq);
