// Package approver is the operator's side of an approval, the same whether
// the decision is made at a terminal, in a chat bot or in a web page.
//
// An Approver lists a run's pending approvals, shows one, and approves,
// rejects or cancels. Local is the Approver over a Store: it decides through
// agentrt.Operator's ApproveShown and RejectShown, so every decision names
// the hash of the approval the front end displayed and is refused if the
// stored approval is no longer that one. There is no way through this
// package to decide an approval without a hash.
//
// Expiry is judged by the approver's clock: an approval past its ExpiresAt
// is shown as Expired without writing anything, and a decision on it is
// recorded by the runtime's own expiry path (the run is cancelled with
// approval_expired), never as a rejection.
//
// The package reads bounded: pending lists come from the store's page
// reads, every model-chosen string is cut by view.BoundApproval, and a
// caller names the run it asks about; nothing here lists runs.
//
// approver/webhook exposes an Approver over signed HTTP, and
// approver/notify tells front ends when an approval starts or stops
// waiting.
package approver
