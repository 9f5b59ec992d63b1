// Package agentrt runs AI agents that take real actions under a runtime the
// model cannot reach.
//
// The model asks; the runtime decides. Every tool call an agent requests is
// recorded as requested, checked against the tool's JSON Schema, judged by a
// Policy (allow, deny, abort, or wait for a person's approval bound to a hash of
// that exact request), executed at most once under Limits, and recorded in the
// same transaction as the state change it causes. Every change is explained by an
// event in a hash chain that VerifyEvents can check.
//
// A Driver owns the loop: it asks an Agent for a Decision, records it, validates
// it, asks the Policy, and executes the Tool. Operators decide approvals with
// ApproveShown and RejectShown, passing the hash of the approval they were
// shown, and cancel runs with Cancel; these need only a Store, and an
// Operator runs them on a clock of its choosing. There is no way to decide an
// approval unbound to what the decider read.
//
// A Gate holds the same bounds for a loop the caller owns: the caller proposes
// each decision through a GateSession, and the gate records, validates, judges and
// executes it with the same code the Driver runs. A RUNNING run is leased to one
// Driver or GateSession at a time; a lease that is lost or lapses starts nothing
// more, and a step a crash cut off is never run again without someone deciding.
//
// The storage seam, Store, is implemented by the sqlite package (the embedded
// default). It is the engine's interface to a backend, not a user extension point.
package agentrt
