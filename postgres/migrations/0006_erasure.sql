-- agentrt schema version 6 for PostgreSQL, mirroring sqlite/migrations/0006.
-- Released migrations never change; add a new file.
CREATE TABLE run_salts (
	run_id TEXT PRIMARY KEY,
	salt TEXT NOT NULL
);
ALTER TABLE events ADD COLUMN payload_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN erased_at TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at != '' AND erased_at = '';
