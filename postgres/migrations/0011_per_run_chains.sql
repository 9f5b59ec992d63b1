-- agentrt schema version 11 for PostgreSQL, mirroring sqlite/migrations/0011.
-- Released migrations never change; add a new file.
--
-- Per-run chains (docs/decisions/0015): commits of different runs share
-- no row. The chain head row every commit locked is gone; seqs come from a
-- sequence (so they may have gaps, and become visible out of commit order
-- across runs), and each event chains onto the previous event of its run.
ALTER TABLE events ADD COLUMN run_seq BIGINT NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX events_run_chain ON events (run_id, run_seq) WHERE run_seq > 0;
CREATE TABLE chain_global_end (
	one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
	seq BIGINT NOT NULL,
	hash TEXT NOT NULL
);
-- chain_head's seq never went back, so a tail cut before the migration
-- still shows as missing events before the global chain's end.
INSERT INTO chain_global_end (seq, hash) SELECT seq, hash FROM chain_head;
DROP TRIGGER events_chain_head ON events;
DROP FUNCTION agentrt_chain_head();
DROP TABLE chain_head;
CREATE SEQUENCE events_seq AS BIGINT OWNED BY events.seq;
SELECT setval('events_seq', GREATEST((SELECT seq FROM chain_global_end), 1), (SELECT seq FROM chain_global_end) > 0);
ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('events_seq');
