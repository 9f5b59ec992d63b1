-- agentrt schema version 7 for PostgreSQL, mirroring sqlite/migrations/0007.
-- Released migrations never change; add a new file.
--
-- The chain head moves once per INSERT into events instead of once per
-- event row. Events are inserted many rows to a statement (a group commit
-- writes every run's events in a few statements), and each row's UPDATE
-- of chain_head cost 12-16 us and left a dead tuple behind; the head still
-- ends each statement at that statement's newest event, and the row lock
-- the writer took on chain_head before inserting still orders writers.
DROP TRIGGER events_chain_head ON events;
DROP FUNCTION agentrt_chain_head();
CREATE FUNCTION agentrt_chain_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE chain_head SET seq = n.seq, hash = n.hash
		FROM (SELECT seq, hash FROM inserted ORDER BY seq DESC LIMIT 1) AS n
		WHERE chain_head.seq < n.seq;
	RETURN NULL;
END $$;
CREATE TRIGGER events_chain_head AFTER INSERT ON events REFERENCING NEW TABLE AS inserted
	FOR EACH STATEMENT EXECUTE FUNCTION agentrt_chain_head();
