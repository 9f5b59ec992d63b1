-- agentrt schema version 9 for PostgreSQL mirroring
-- sqlite/migrations/0009: the checkpoints' tables, and each event's
-- transaction id.
--
-- xid is filled by its DEFAULT, so the insert path names no new column. The
-- integrator folds only events whose transaction ended before every
-- transaction still running (xid < pg_snapshot_xmin of its snapshot): a seq
-- taken by a transaction still open may be smaller than one already
-- committed, and no such event can appear below that watermark later.
-- Existing rows take the migration's own transaction id.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_xid ON events (xid);
CREATE TABLE event_leaves (
	seq BIGINT PRIMARY KEY,
	leaf BIGINT NOT NULL UNIQUE
);
CREATE TABLE tree_hashes (
	id BIGINT PRIMARY KEY,
	hash BYTEA NOT NULL
);
CREATE TABLE checkpoints (
	size BIGINT PRIMARY KEY,
	root TEXT NOT NULL,
	prev TEXT NOT NULL,
	hash TEXT NOT NULL UNIQUE,
	at TEXT NOT NULL,
	floor BIGINT NOT NULL,
	body TEXT NOT NULL,
	signed TEXT NOT NULL
);
