-- One row per proxied call (one run). At most one row per session and
-- request key is open: the one an identical call is matched against.
CREATE TABLE proxy_calls (
	id          INTEGER PRIMARY KEY,
	session     TEXT    NOT NULL,
	request_key TEXT    NOT NULL,
	tool        TEXT    NOT NULL,
	side_effect TEXT    NOT NULL,
	run_id      TEXT    NOT NULL UNIQUE,
	created_at  INTEGER NOT NULL,
	open        INTEGER NOT NULL,
	state       TEXT    NOT NULL,
	approval_id TEXT    NOT NULL DEFAULT '',
	blocking    INTEGER NOT NULL DEFAULT 0,
	unknown_of  TEXT    NOT NULL DEFAULT '',
	interrupted TEXT    NOT NULL DEFAULT '',
	outcome     TEXT    NOT NULL DEFAULT '',
	detail      TEXT    NOT NULL DEFAULT '',
	settled_at  INTEGER NOT NULL DEFAULT 0,
	open_until  INTEGER NOT NULL DEFAULT 0,
	closed_at   INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE UNIQUE INDEX proxy_calls_open ON proxy_calls (session, request_key) WHERE open = 1;
CREATE INDEX proxy_calls_blocking ON proxy_calls (session, tool) WHERE blocking = 1;
CREATE INDEX proxy_calls_recent ON proxy_calls (session, created_at);
