-- agentrt schema version 12. Released migrations never change; add a new file.
--
-- Nothing changes in SQLite: it has no notifications, and its workers
-- poll. The number keeps the two backends' versions equal for
-- postgres/migrations/0012, which notifies only when a run becomes
-- claimable (enqueued, or its lease released), no longer at each claim.
SELECT 1;
