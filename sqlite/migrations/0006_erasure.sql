-- agentrt schema version 6. Released migrations never change; add a new file.
--
-- Erasure. Each run created from this version on gets a random salt, and
-- the chain hashes its events' payloads keyed by it (SHA-256 of salt and payload) instead
-- of plainly (SHA-256): erasing a run deletes the salt with the content,
-- so the digests left in the chain cannot confirm a guess of what was
-- erased. Runs created before have no salt and keep plain digests.
CREATE TABLE run_salts (
	run_id TEXT PRIMARY KEY,
	salt TEXT NOT NULL
);

-- An erased event's payload holds only its metadata; payload_digest keeps
-- the digest the chain hashed, so the chain verifies without the content.
-- '' for an event that was not erased.
ALTER TABLE events ADD COLUMN payload_digest TEXT NOT NULL DEFAULT '';

-- When a run's content was erased ('' for never): an erased run is not
-- erased again, and appends no more events but its run.erased.
ALTER TABLE runs ADD COLUMN erased_at TEXT NOT NULL DEFAULT '';
-- Retention looks for terminal runs finished before a time, oldest first.
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at != '' AND erased_at = '';
