// Package checkpoint folds an agentrt database's committed events into an
// RFC 6962 Merkle tree and writes a checkpoint per batch: the tree's size
// and root, the previous checkpoint's hash and the time, signed as a note
// (golang.org/x/mod/sumdb/note) when a key is configured.
//
// An Integrator does the folding; one runs per database (a backend elects
// it: a PostgreSQL advisory lock, a lock in the process on SQLite). Each
// event's stored chain hash is its leaf's input, so the tree vouches for
// every event's fields as the chain does. The tree's hashes and proofs come
// from golang.org/x/mod/sumdb/tlog; this package writes no Merkle code.
//
// Verify checks a database's checkpoints against its events; Receipt and
// VerifyReceipt make and check, with no database, the proof that a run's
// events are in a signed checkpoint. See docs/decisions/0015 and
// docs/receipts.md.
package checkpoint
