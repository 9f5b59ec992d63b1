// Package notify tells approval front ends when an approval starts or stops
// waiting, so a chat bot need not poll.
//
// A Notifier follows a runs database's event log (export.Follower, read
// only) and POSTs a signed Notification to every configured target when an
// approval is requested, approved, rejected, expired or cancelled. The
// signature is the approval webhook's scheme (X-Approval-Timestamp,
// X-Approval-Nonce, X-Approval-Signature: HMAC-SHA256 over the timestamp,
// nonce, method, path with its query, and body) under each target's own
// secret. A Receiver verifies it, refusing a forged, stale or replayed
// notification.
//
// A notification carries the run, the approval, its kind, tool, hash and
// expiry, and a bounded summary escaped with trace.Sanitize. The tool's
// arguments are sent only when Config.IncludeArguments is set.
//
// Delivery is at least once. The cursor (export.FileCursor, saved 0600)
// advances only past events every target has answered with a 2xx or that
// were given up on, so a stop or a crash re-sends, never skips; the
// notification's ID is the event's seq, for a receiver to drop a repeat.
// A failed delivery is retried with exponential backoff up to a cap; a 3xx
// (redirects are never followed) or a 4xx other than 408 and 429 is not
// retried. A delivery given up on is written to Config.Stderr as one
// dead-letter line. At most Config.QueueSize events wait for delivery; the
// follower waits for room.
//
// A target over plain http is refused unless its host is localhost or a
// loopback address, and then only over a connection that is loopback.
package notify
