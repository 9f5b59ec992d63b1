// Package webhook exposes an approver.Approver over HTTP to a remote front
// end, a chat bot or a web page, with every request signed.
//
// Routes, relative to wherever the Handler is mounted (http.StripPrefix
// works; the signature covers the path the Handler sees):
//
//	GET  /runs/{run}/approvals               the run's pending approvals, at most Config.Limit
//	GET  /runs/{run}/approvals/{id}          one approval; text with Accept: text/plain or ?format=text
//	POST /runs/{run}/approvals/{id}/approve  a Decision; 202, the run waits for Resume
//	POST /runs/{run}/approvals/{id}/reject   a Decision; 200, the run is cancelled
//	POST /runs/{run}/cancel                  {"run_id", "by", "note"}; 200
//
// Anything else is 404. Every route names one run and nothing lists runs,
// so a caller holding one run's id learns nothing about another's: an
// approval of another run is not found, exactly as one that does not exist.
//
// Every request, reads included, carries X-Approval-Timestamp (unix
// seconds), X-Approval-Nonce and X-Approval-Signature: "v1=" and the hex
// HMAC-SHA256 under Config.Secret of the timestamp, nonce, method, path
// (with its query) and body, joined by newlines with the body last. Sign,
// NewRequest and Client make them. A timestamp more than Config.Skew from
// the handler's clock is refused, and so is a signature already accepted.
//
// Before anything is read the request is charged against a token bucket
// (Config.Rate, Config.Burst; 429), and a body over Config.MaxBody is
// refused with 413 without reading past the bound. Errors are JSON
// {"error", "code"} with the codes named by the Code constants, and every
// response carries Cache-Control: no-store.
//
// A decision is recorded through the Approver, so it is bound to the hash
// the caller was shown: a stale hash is 409 approval_changed and decides
// nothing. An expired approval is 410, and a decision on it makes the
// runtime record the expiry.
//
// The handler speaks plain HTTP. Run it behind TLS and a network boundary
// the operator controls; docs/approvals.md says how.
package webhook
