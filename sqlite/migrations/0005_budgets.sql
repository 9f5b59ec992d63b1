-- agentrt schema version 5. Released migrations never change; add a new file.
-- (Numbered 0005 on this branch; it is meant to land as 0006, after the
-- migrations of issues 25 and 30.)
--
-- Budgets shared by runs: a scope of labels, a fixed window, ceilings in
-- cost micros and tokens. A budget is never deleted: it is retired, and
-- only one unretired budget may hold a name.
CREATE TABLE budgets (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	scope TEXT NOT NULL DEFAULT '',
	period TEXT NOT NULL,
	max_cost_micros INTEGER NOT NULL DEFAULT 0,
	max_tokens INTEGER NOT NULL DEFAULT 0,
	version INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	created_by TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	updated_by TEXT NOT NULL,
	retired_at TEXT NOT NULL DEFAULT '',
	retired_by TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX budgets_active_name ON budgets (name) WHERE retired_at = '';

-- What each window of a budget holds. A reservation adds to reserved by a
-- statement that checks the ceilings in its WHERE clause, so concurrent
-- reservations from many processes can never pass them together.
CREATE TABLE budget_windows (
	budget_id TEXT NOT NULL REFERENCES budgets(id),
	window_start TEXT NOT NULL,
	reserved_cost_micros INTEGER NOT NULL DEFAULT 0,
	reserved_tokens INTEGER NOT NULL DEFAULT 0,
	settled_cost_micros INTEGER NOT NULL DEFAULT 0,
	settled_tokens INTEGER NOT NULL DEFAULT 0,
	uncertain_cost_micros INTEGER NOT NULL DEFAULT 0,
	uncertain_tokens INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (budget_id, window_start)
);

-- One model call's hold on one budget, written in its dispatch
-- transaction and settled in the transaction that records its outcome.
CREATE TABLE budget_reservations (
	call_id TEXT NOT NULL,
	budget_id TEXT NOT NULL REFERENCES budgets(id),
	window_start TEXT NOT NULL,
	run_id TEXT NOT NULL,
	step_id TEXT NOT NULL,
	attempt INTEGER NOT NULL,
	generation INTEGER NOT NULL,
	provider TEXT NOT NULL,
	model TEXT NOT NULL,
	max_output_tokens INTEGER NOT NULL,
	price_version TEXT NOT NULL,
	reserved_cost_micros INTEGER NOT NULL,
	reserved_tokens INTEGER NOT NULL,
	status TEXT NOT NULL,
	actual_cost_micros INTEGER NOT NULL DEFAULT 0,
	actual_tokens INTEGER NOT NULL DEFAULT 0,
	expires_at TEXT NOT NULL,
	created_at TEXT NOT NULL,
	settled_at TEXT NOT NULL DEFAULT '',
	settled_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (call_id, budget_id)
);
CREATE INDEX budget_reservations_run ON budget_reservations (run_id);
CREATE INDEX budget_reservations_budget ON budget_reservations (budget_id, status);

-- Immutable price tables, each under the SHA-256 of its canonical JSON.
CREATE TABLE price_versions (
	id TEXT PRIMARY KEY,
	table_json TEXT NOT NULL,
	created_at TEXT NOT NULL
);
