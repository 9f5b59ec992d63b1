-- agentrt schema version 4 for PostgreSQL, mirroring sqlite/migrations/0004:
-- indexes for a worker's claim and for runs by status, whose rows Postgres
-- orders by the explicit rowid.
--
-- And what wakes idle workers: a commit that may have made a run claimable
-- (a run enqueued, a lease released, an approval decided) sends a
-- notification on the channel agentrt_runnable, with the schema as payload,
-- so a worker listening on the same schema claims at once rather than at
-- its next poll. NOTIFY is delivered at commit, never for a rolled-back
-- write, and repeats within one transaction fold into one. Polling stays
-- the fallback.
CREATE INDEX runs_status ON runs (status, rowid);
CREATE INDEX steps_run_status ON steps (run_id, status);
CREATE INDEX approvals_run_status ON approvals (run_id, status, expires_at);

CREATE FUNCTION agentrt_notify_runnable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('agentrt_runnable', current_schema());
	RETURN NULL;
END
$$;

CREATE TRIGGER runs_notify_runnable AFTER INSERT OR UPDATE OF status, lease_owner ON runs
	FOR EACH ROW WHEN (NEW.status = 'ENQUEUED' OR (NEW.lease_owner = '' AND NEW.status IN ('RUNNING', 'WAITING_FOR_APPROVAL')))
	EXECUTE FUNCTION agentrt_notify_runnable();

CREATE TRIGGER approvals_notify_decided AFTER UPDATE OF status ON approvals
	FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending')
	EXECUTE FUNCTION agentrt_notify_runnable();
