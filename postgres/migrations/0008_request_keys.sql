-- agentrt schema version 8 for PostgreSQL, mirroring
-- sqlite/migrations/0008: a step's request key, written with its decision,
-- indexed for the look-up of an identical request's earlier answer.
ALTER TABLE steps ADD COLUMN request_key TEXT NOT NULL DEFAULT '';
CREATE INDEX steps_request_key ON steps (request_key, started_at) WHERE request_key <> '';
