-- agentrt schema version 11. Released migrations never change; add a new file.
--
-- Per-run chains (docs/decisions/0015). Events written from this version
-- on chain within their run: each one's hash covers the hash of the run's
-- event before it, and run_seq is its place in the run (1 for the run's
-- first). Events written before keep run_seq 0 and the one global chain
-- they were written in; chain_global_end records where that chain ends
-- (the newest event at the migration, or 0 and '' for none), so verify
-- checks it up to there and per run after.
ALTER TABLE events ADD COLUMN run_seq INTEGER NOT NULL DEFAULT 0;
-- Two writers appending to one run from the same head collide here: the
-- second insert fails and its transaction runs again on the new head.
CREATE UNIQUE INDEX events_run_chain ON events (run_id, run_seq) WHERE run_seq > 0;
CREATE TABLE chain_global_end (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	seq INTEGER NOT NULL,
	hash TEXT NOT NULL
);
INSERT INTO chain_global_end (one, seq, hash)
	SELECT 1, COALESCE((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0),
		COALESCE((SELECT hash FROM events ORDER BY seq DESC LIMIT 1), '');
