-- agentrt schema version 1 for PostgreSQL, mirroring sqlite/migrations/0001.
-- Released migrations never change; add a new file.
--
-- Columns keep SQLite's types and formats (times are RFC 3339 text, JSON is
-- text) so that one SQL implementation reads and writes both. Each table
-- that SQLite orders by its implicit rowid has an explicit one here.
CREATE TABLE runs (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	goal TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	reason_detail TEXT NOT NULL DEFAULT '',
	limits_json TEXT NOT NULL DEFAULT '{}',
	step_count BIGINT NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL,
	started_at TEXT NOT NULL DEFAULT '',
	finished_at TEXT NOT NULL DEFAULT '',
	result_json TEXT NOT NULL DEFAULT '',
	model_calls BIGINT NOT NULL DEFAULT 0,
	input_tokens BIGINT NOT NULL DEFAULT 0,
	output_tokens BIGINT NOT NULL DEFAULT 0,
	cached_input_tokens BIGINT NOT NULL DEFAULT 0,
	estimated_cost_micros BIGINT NOT NULL DEFAULT 0,
	active_ns BIGINT NOT NULL DEFAULT 0,
	lease_owner TEXT NOT NULL DEFAULT '',
	lease_expires_at TEXT NOT NULL DEFAULT '',
	generation BIGINT NOT NULL DEFAULT 0
);
-- A worker's claim looks for runnable runs, oldest first.
CREATE INDEX runs_runnable ON runs (rowid) WHERE status IN ('ENQUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL');

CREATE TABLE steps (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs(id),
	idx BIGINT NOT NULL,
	status TEXT NOT NULL,
	decision_json TEXT NOT NULL DEFAULT '',
	policy_json TEXT NOT NULL DEFAULT '',
	observation_json TEXT NOT NULL DEFAULT '',
	started_at TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	spec_hash TEXT NOT NULL DEFAULT '',
	policy_id TEXT NOT NULL DEFAULT '',
	UNIQUE (run_id, idx)
);

CREATE TABLE approvals (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs(id),
	step_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	capability_json TEXT NOT NULL,
	presentation_json TEXT NOT NULL,
	request_json TEXT NOT NULL,
	hash TEXT NOT NULL,
	status TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL DEFAULT '',
	decided_at TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX approvals_run ON approvals (run_id);

CREATE TABLE model_calls (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs(id),
	step_id TEXT NOT NULL,
	attempt BIGINT NOT NULL,
	status TEXT NOT NULL,
	model TEXT NOT NULL,
	input_tokens BIGINT NOT NULL DEFAULT 0,
	output_tokens BIGINT NOT NULL DEFAULT 0,
	cached_input_tokens BIGINT NOT NULL DEFAULT 0,
	cost_micros BIGINT NOT NULL DEFAULT 0,
	latency_ns BIGINT NOT NULL DEFAULT 0,
	error TEXT NOT NULL DEFAULT '',
	dispatched_at TEXT NOT NULL,
	completed_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX model_calls_run ON model_calls (run_id);

CREATE TABLE tool_specs (
	hash TEXT PRIMARY KEY,
	spec_json TEXT NOT NULL
);

CREATE TABLE events (
	seq BIGINT PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs(id),
	step_id TEXT NOT NULL DEFAULT '',
	at TEXT NOT NULL,
	type TEXT NOT NULL,
	payload_json TEXT NOT NULL,
	hash TEXT NOT NULL
);
CREATE INDEX events_run ON events (run_id, seq);

-- The chain head: one row, locked by every write transaction before it
-- appends (writers in many processes take turns on it) and moved by each
-- insert. Its seq never goes back, so a seq is never used twice and a
-- deleted tail leaves a gap the verifier reports, as sqlite_sequence does.
CREATE TABLE chain_head (
	one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
	seq BIGINT NOT NULL,
	hash TEXT NOT NULL
);
INSERT INTO chain_head (seq, hash) VALUES (0, '');

CREATE FUNCTION agentrt_chain_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE chain_head SET seq = NEW.seq, hash = NEW.hash WHERE seq < NEW.seq;
	RETURN NULL;
END $$;
CREATE TRIGGER events_chain_head AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION agentrt_chain_head();

-- The few SQLite functions the shared SQL uses, with SQLite's meaning for
-- the values agentrt stores. Columns here are typed, so typeof only names
-- the type; json_extract with several paths returns a JSON array of the
-- values at '$.field' paths, NULL for one the document lacks.
CREATE FUNCTION typeof(bigint) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'integer' $$;
CREATE FUNCTION typeof(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'text' $$;
CREATE FUNCTION json_valid(doc text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
	PERFORM doc::jsonb;
	RETURN true;
EXCEPTION WHEN others THEN
	RETURN false;
END $$;
CREATE FUNCTION json_extract(doc text, VARIADIC paths text[]) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN jsonb_typeof(doc::jsonb) = 'object' THEN
		(SELECT jsonb_agg(doc::jsonb -> substr(p, 3) ORDER BY n)::text FROM unnest(paths) WITH ORDINALITY AS u(p, n))
	END
$$;
