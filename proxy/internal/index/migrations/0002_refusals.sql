-- One row per request an upstream server sent the host's way that the
-- proxy refused (sampling, elicitation, roots): the proxy never lets a
-- server ask the host or its user anything, and says when one tried.
CREATE TABLE proxy_refusals (
	id      INTEGER PRIMARY KEY,
	session TEXT    NOT NULL,
	server  TEXT    NOT NULL,
	method  TEXT    NOT NULL,
	at      INTEGER NOT NULL
) STRICT;
