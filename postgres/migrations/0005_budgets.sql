-- agentrt schema version 5 for PostgreSQL, mirroring
-- sqlite/migrations/0005 (numbered 0005 on this branch; it is meant to land
-- as 0006): budgets, their windows' counters, reservations and immutable
-- price versions. Tables read in insertion order have an explicit rowid.
CREATE TABLE budgets (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	scope TEXT NOT NULL DEFAULT '',
	period TEXT NOT NULL,
	max_cost_micros BIGINT NOT NULL DEFAULT 0,
	max_tokens BIGINT NOT NULL DEFAULT 0,
	version BIGINT NOT NULL,
	created_at TEXT NOT NULL,
	created_by TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	updated_by TEXT NOT NULL,
	retired_at TEXT NOT NULL DEFAULT '',
	retired_by TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX budgets_active_name ON budgets (name) WHERE retired_at = '';

CREATE TABLE budget_windows (
	budget_id TEXT NOT NULL REFERENCES budgets(id),
	window_start TEXT NOT NULL,
	reserved_cost_micros BIGINT NOT NULL DEFAULT 0,
	reserved_tokens BIGINT NOT NULL DEFAULT 0,
	settled_cost_micros BIGINT NOT NULL DEFAULT 0,
	settled_tokens BIGINT NOT NULL DEFAULT 0,
	uncertain_cost_micros BIGINT NOT NULL DEFAULT 0,
	uncertain_tokens BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (budget_id, window_start)
);

CREATE TABLE budget_reservations (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	call_id TEXT NOT NULL,
	budget_id TEXT NOT NULL REFERENCES budgets(id),
	window_start TEXT NOT NULL,
	run_id TEXT NOT NULL,
	step_id TEXT NOT NULL,
	attempt BIGINT NOT NULL,
	generation BIGINT NOT NULL,
	provider TEXT NOT NULL,
	model TEXT NOT NULL,
	max_output_tokens BIGINT NOT NULL,
	price_version TEXT NOT NULL,
	reserved_cost_micros BIGINT NOT NULL,
	reserved_tokens BIGINT NOT NULL,
	status TEXT NOT NULL,
	actual_cost_micros BIGINT NOT NULL DEFAULT 0,
	actual_tokens BIGINT NOT NULL DEFAULT 0,
	expires_at TEXT NOT NULL,
	created_at TEXT NOT NULL,
	settled_at TEXT NOT NULL DEFAULT '',
	settled_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (call_id, budget_id)
);
CREATE INDEX budget_reservations_run ON budget_reservations (run_id);
CREATE INDEX budget_reservations_budget ON budget_reservations (budget_id, status);

CREATE TABLE price_versions (
	rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
	id TEXT PRIMARY KEY,
	table_json TEXT NOT NULL,
	created_at TEXT NOT NULL
);
