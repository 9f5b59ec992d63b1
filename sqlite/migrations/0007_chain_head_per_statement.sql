-- agentrt schema version 7. Released migrations never change; add a new file.
--
-- Nothing changes in SQLite: it reads the chain head from the newest event
-- and keeps no head row. The number keeps the two backends' versions equal
-- for postgres/migrations/0007, which moves the Postgres head once per
-- INSERT statement instead of once per event row.
SELECT 1;
