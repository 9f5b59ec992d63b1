-- agentrt schema version 10. Released migrations never change; add a new file.
--
-- Multi-party approvals. An approver carries roles and a scope (which
-- approvals it may decide), as JSON. An approval may carry a requirement
-- (stages of votes) and the version of the policy that asked for it; the
-- approval's hash binds both. Votes are kept one per approver per approval
-- so the deciding transaction can count them; only the chain's
-- approval.voted events grant at execution. Postgres mirrors this in
-- postgres/migrations/0009.
ALTER TABLE approvers ADD COLUMN access_json TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN requirement_json TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN policy_version TEXT NOT NULL DEFAULT '';
CREATE TABLE approval_votes (
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
