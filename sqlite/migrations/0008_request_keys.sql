-- agentrt schema version 8. Released migrations never change; add a new file.
--
-- A step's request key (agentrt.RequestKey: the SHA-256 of the tool's name,
-- a NUL and the canonical arguments), written with its decision, so a
-- restarted caller finds an identical request's earlier answer in any run.
-- Steps recorded before have none (''), and are not indexed. Postgres
-- mirrors this in postgres/migrations/0008.
ALTER TABLE steps ADD COLUMN request_key TEXT NOT NULL DEFAULT '';
CREATE INDEX steps_request_key ON steps (request_key, started_at) WHERE request_key <> '';
