// Package postgres is the PostgreSQL backend of agentrt: [Open] returns an
// agentrt.Store that many worker processes on many hosts can share.
//
// It is the one nested module that imports the core's internal/sqlstore.
// Every other surface builds on the public API; the Store implementation is
// the exception the design makes: one SQL implementation serves SQLite and
// Postgres through a small dialect (numbered placeholders, upsert, the chain
// head's lock, FOR UPDATE SKIP LOCKED for claims, and the database clock),
// so both backends pass the same conformance suite (storetest) by running
// the same statements.
//
// What differs from SQLite:
//
//   - Lease time comes from the database's clock: every lease expiry is
//     written as now() plus a TTL and every lapse is judged against now(),
//     never a worker's clock, so hosts whose clocks disagree still agree on
//     who holds a run (agentrt.DatabaseClock). A worker stops trusting a
//     lease by its own clock, counted from before the write that took it.
//   - Writers in many processes append to one hash chain: each write
//     transaction locks the chain's head row first and reads the head under
//     that lock. The fencing generation is named in every write, so a
//     worker that lost its lease cannot write, whatever it believes.
//   - Workers claim runnable runs with FOR UPDATE SKIP LOCKED.
//   - The schema is checked by its version table: a database another build
//     migrated further is refused with both versions, and one whose tables
//     agentrt did not create is refused. SQLite's exact-schema rule (a file
//     an operator may be handed) does not apply to a server a deployment
//     owns.
//
// Migrations are embedded, numbered and forward-only, each applied in its
// own transaction under an advisory lock, so processes that open one
// database at once migrate it once. See docs/postgres.md.
package postgres
