-- agentrt schema version 9. Released migrations never change; add a new file.
--
-- Checkpoints (docs/decisions/0015): an integrator folds committed events,
-- in batches, as leaves of an RFC 6962 Merkle tree and writes one
-- checkpoint per batch. The insert path writes none of these tables.
--
-- event_leaves: each folded event's leaf index, keyed by its seq. A leaf
-- index is used once (UNIQUE), so two integrators folding the same batch
-- conflict and one rolls back.
CREATE TABLE event_leaves (
	seq INTEGER PRIMARY KEY,
	leaf INTEGER NOT NULL UNIQUE
);
-- tree_hashes: the tree's stored hashes, by golang.org/x/mod/sumdb/tlog's
-- stored-hash index, from which roots and proofs are computed.
CREATE TABLE tree_hashes (
	id INTEGER PRIMARY KEY,
	hash BLOB NOT NULL
);
-- checkpoints: one per batch. size is the tree size after it, root the
-- tree's hash, prev the previous checkpoint's hash ('' for the first),
-- hash the SHA-256 of body, body the checkpoint's text and signed that text
-- as a signed note ('' without a key). floor is the integrator's cursor:
-- every event below it is folded (a seq on SQLite, a transaction id on
-- PostgreSQL).
CREATE TABLE checkpoints (
	size INTEGER PRIMARY KEY,
	root TEXT NOT NULL,
	prev TEXT NOT NULL,
	hash TEXT NOT NULL UNIQUE,
	at TEXT NOT NULL,
	floor INTEGER NOT NULL,
	body TEXT NOT NULL,
	signed TEXT NOT NULL
);
