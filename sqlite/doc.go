// Package sqlite is agentrt's embedded storage backend, on modernc.org/sqlite
// (pure Go). Open creates or migrates a database for a driver; OpenExisting
// opens one an operator names, never creating or migrating it.
//
// Every connection runs in WAL mode with synchronous=FULL (every commit is
// synced), immediate transactions, a busy timeout, foreign keys,
// trusted_schema off and SQLite's defensive mode on; a read connection loads
// no value longer than agentrt.MaxStoredValue plus one page. Files are
// owner-only: a database or sidecar another account owns, or group or others
// can write, is refused, and one they can only read is tightened by a writer.
// A database whose schema is not exactly the one the migrations create is
// refused before any statement touches a table of it but schema_migrations.
// Everything is checked before the first write, so a refused file is left
// unchanged.
package sqlite
