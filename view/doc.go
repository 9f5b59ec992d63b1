// Package view holds the read models operator surfaces print: runs, steps
// and approvals as the bounded page reads of agentrt.StoreReader return
// them, and the rule for which approval an operator means.
//
// Everything here reads; nothing decides. Deciding is agentrt.ApproveShown
// and agentrt.RejectShown, given the hash of the approval that was shown.
//
// The read models are bounded twice. The store caps every text column of a
// page at agentrt.MaxPageText, and this package caps every string it hands
// on at MaxFieldBytes, keeping a head and a tail, so that JSON output never
// carries more than a text surface shows. Hashes are never bounded or
// changed: they identify what was stored, not what was shown.
package view
