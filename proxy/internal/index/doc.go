// Package index is the proxy's call index: one row per proxied call,
// which identical calls share, in the proxy's own SQLite file beside the
// runs database (ADR 0006). It holds every statement on the index's
// tables; the proxy reaches them through Index's methods and, inside one
// transaction, through Tx's.
//
// The core's store refuses any schema but its migrations', so the proxy's
// table cannot live in the runs database; a file of its own keeps both
// guarantees: the runs database stays exactly the core's, and the index is
// held to the same rules (owner-only, no symbolic link, no trigger or view,
// trusted_schema off, defensive mode, synced commits, forward-only
// migrations with a newer file refused). Writes go through one writer that
// commits concurrent updates together, each in a savepoint of its own.
package index
