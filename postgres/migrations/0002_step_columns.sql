-- agentrt schema version 2 for PostgreSQL, mirroring
-- sqlite/migrations/0002: the fields a page prints of a step's JSON column
-- over a page's cap (64 KiB), as a JSON array the writer fills in the
-- statement that writes the JSON. NULL means not recorded, and a page then
-- reads the fields from the JSON itself, so rows written before this
-- migration need no backfill. Column order does not matter here as it does
-- in SQLite: Postgres keeps a big value out of line (TOAST) wherever its
-- column sits.
ALTER TABLE steps
	ADD COLUMN decision_fields TEXT,
	ADD COLUMN policy_fields TEXT,
	ADD COLUMN observation_fields TEXT;
