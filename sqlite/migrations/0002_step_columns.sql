-- agentrt schema version 2. Released migrations never change; add a new file.
--
-- A page of steps reads every small column and never a big JSON value, so
-- steps is rebuilt with its small columns first and its JSON columns last:
-- SQLite reads a record's columns in order, and reaching a column stored
-- after a big value walks that value's overflow pages.
--
-- decision_fields, policy_fields and observation_fields hold, for a JSON
-- column over a page's cap (64 KiB), the fields a page prints of it as a
-- JSON array, each string at most 200 bytes (a longer one is its head and
-- "…[truncated: N bytes]"). The writer fills them in the statement that
-- writes the JSON; NULL means not recorded, and a page then reads the
-- fields from the JSON itself. They are for display only: every full read
-- decodes the JSON.
CREATE TABLE steps_v2 (
	id TEXT PRIMARY KEY,
	run_id TEXT NOT NULL REFERENCES runs(id),
	idx INTEGER NOT NULL,
	status TEXT NOT NULL,
	started_at TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	spec_hash TEXT NOT NULL DEFAULT '',
	policy_id TEXT NOT NULL DEFAULT '',
	decision_fields TEXT,
	policy_fields TEXT,
	observation_fields TEXT,
	decision_json TEXT NOT NULL DEFAULT '',
	policy_json TEXT NOT NULL DEFAULT '',
	observation_json TEXT NOT NULL DEFAULT '',
	UNIQUE (run_id, idx)
);

-- Older rows get their fields the way the writer makes them. A value that
-- is not JSON text, or is larger than any agentrt writes (16 MiB), is left
-- unrecorded, and a page says so as it did before.
INSERT INTO steps_v2 (rowid, id, run_id, idx, status, started_at, finished_at, spec_hash, policy_id,
	decision_fields, policy_fields, observation_fields, decision_json, policy_json, observation_json)
SELECT rowid, id, run_id, idx, status, started_at, finished_at, spec_hash, policy_id,
	CASE WHEN typeof(decision_json) = 'text' AND octet_length(decision_json) > 65536
		AND octet_length(decision_json) <= 16777216 AND json_valid(decision_json) THEN
		(SELECT json_group_array(CASE WHEN octet_length(value) > 200
			THEN substr(CAST(value AS TEXT), 1, 40) || '…[truncated: ' || octet_length(value) || ' bytes]' ELSE value END)
		FROM json_each(json_extract(decision_json, '$.kind', '$.tool', '$.reason', '$.message')))
	END,
	CASE WHEN typeof(policy_json) = 'text' AND octet_length(policy_json) > 65536
		AND octet_length(policy_json) <= 16777216 AND json_valid(policy_json) THEN
		(SELECT json_group_array(CASE WHEN octet_length(value) > 200
			THEN substr(CAST(value AS TEXT), 1, 40) || '…[truncated: ' || octet_length(value) || ' bytes]' ELSE value END)
		FROM json_each(json_extract(policy_json, '$.outcome', '$.reason', '$.kind')))
	END,
	CASE WHEN typeof(observation_json) = 'text' AND octet_length(observation_json) > 65536
		AND octet_length(observation_json) <= 16777216 AND json_valid(observation_json) THEN
		(SELECT json_group_array(CASE WHEN octet_length(value) > 200
			THEN substr(CAST(value AS TEXT), 1, 40) || '…[truncated: ' || octet_length(value) || ' bytes]' ELSE value END)
		FROM json_each(json_extract(observation_json, '$.kind', '$.summary', '$.content_hash')))
	END,
	decision_json, policy_json, observation_json
FROM steps ORDER BY rowid;

DROP TABLE steps;
ALTER TABLE steps_v2 RENAME TO steps;
