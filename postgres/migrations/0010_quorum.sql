-- agentrt schema version 10 for PostgreSQL, mirroring
-- sqlite/migrations/0010: approvers' roles and scope, an approval's
-- requirement and policy version, and one vote per approver per approval.
ALTER TABLE approvers ADD COLUMN access_json TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN requirement_json TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN policy_version TEXT NOT NULL DEFAULT '';
CREATE TABLE approval_votes (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	approval_id TEXT NOT NULL,
	run_id TEXT NOT NULL,
	approver_id TEXT NOT NULL,
	approver_name TEXT NOT NULL,
	stage INTEGER NOT NULL,
	decision TEXT NOT NULL,
	note TEXT NOT NULL DEFAULT '',
	at TEXT NOT NULL,
	signature_json TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (approval_id, approver_id)
);
