-- agentrt schema version 4. Released migrations never change; add a new file.
--
-- Indexes for the two reads that scanned every run: a worker's claim
-- (runnable runs by status, oldest first; a waiting run's awaiting step and
-- its pending approval) and the console's and `agentrt runs`' page of one
-- status. SQLite orders an index's entries by rowid within a key, so
-- runs_status serves ORDER BY rowid for one status. Postgres mirrors these
-- in postgres/migrations/0004.
CREATE INDEX runs_status ON runs (status);
CREATE INDEX steps_run_status ON steps (run_id, status);
CREATE INDEX approvals_run_status ON approvals (run_id, status, expires_at);
