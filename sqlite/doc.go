// Package sqlite is agentrt's embedded storage backend, on modernc.org/sqlite
// (pure Go). Open creates or migrates a database for a driver; OpenExisting
// opens one an operator names, never creating or migrating it.
//
// Every connection runs in WAL mode with synchronous=FULL (every commit is
// synced), immediate transactions, a busy timeout, foreign keys,
// trusted_schema off and SQLite's defensive mode on. Files are owner-only: a
// database or sidecar that group or others can write is refused, one they can
// only read is tightened by a writer that owns it, and a database holding a
// trigger or a view is refused before any statement touches a table.
package sqlite
