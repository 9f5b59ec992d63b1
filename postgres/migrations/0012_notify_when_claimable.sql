-- agentrt schema version 12 for PostgreSQL: notify only when a run becomes
-- claimable.
--
-- Migration 0004's trigger on runs fired on every write that named status
-- or lease_owner while the run was ENQUEUED, so each claim of an enqueued
-- run notified too, though a claim makes nothing claimable: it only woke
-- every idle worker into a claim that found nothing. A transaction that
-- notifies takes PostgreSQL's one NOTIFY queue lock at COMMIT and holds it
-- through the commit's WAL flush, so these notifications serialised the
-- commits of every worker process (docs/performance.md, "Worker
-- processes"). Now a run notifies when it is enqueued, and when an update
-- leaves it unleased in a claimable status that it was not in unleased
-- before (its lease released at a step boundary or at a pause). The
-- approvals trigger (a decision) is unchanged. A lapsed lease never
-- notified; polling finds it, and any run a notification could not name.
DROP TRIGGER runs_notify_runnable ON runs;

CREATE TRIGGER runs_notify_inserted AFTER INSERT ON runs
	FOR EACH ROW WHEN (NEW.status = 'ENQUEUED' OR (NEW.lease_owner = '' AND NEW.status IN ('RUNNING', 'WAITING_FOR_APPROVAL')))
	EXECUTE FUNCTION agentrt_notify_runnable();

CREATE TRIGGER runs_notify_released AFTER UPDATE OF status, lease_owner ON runs
	FOR EACH ROW WHEN (NEW.lease_owner = '' AND NEW.status IN ('ENQUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL')
		AND (OLD.lease_owner <> '' OR OLD.status <> NEW.status))
	EXECUTE FUNCTION agentrt_notify_runnable();
