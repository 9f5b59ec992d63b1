// Package providers holds what every model adapter shares: a bounded body
// reader, an HTTP client that never follows a redirect, endpoint and loopback
// checks that keep an API key on the machine over plain http, status and
// transport classification into the runtime's error vocabulary, usage
// validation, price tables, Endpoint, the model and how to reach it, which
// every adapter's Config embeds, and Secret, the type the Endpoint holds
// the key in so that no encoding of the Config shows it. Base gives an
// adapter's Model its names, redaction and sending (Generate, EncodeRequest,
// SendEncoded) from an Exchange, the adapter's encode and decode. The
// helpers in wire.go are the parts of those every wire format shares;
// ReplyFormat.Decode is every adapter's decode, reading the usage first and
// leaving the adapter only its field names and the mapping of the rest.
//
// It depends only on the standard library and the root package. The adapters
// themselves live in providers/openai, providers/anthropic and
// providers/ollama.
//
// The error contract every adapter follows:
//
//   - A transient HTTP status (408, 409, 425, 429, any 5xx) or a transport
//     failure that certainly sent nothing is an *agentrt.TransientError,
//     carrying Retry-After when the server sent one.
//   - A caller cancellation, a timeout, or a connection cut mid-reply is
//     returned bare: the request may have been served.
//   - Any other failure is permanent: a *StatusError, a *RedirectError, an
//     *EndpointError, ErrBodyTooLarge, ErrNotLoopback.
//   - A 2xx reply that cannot be used is an *agentrt.ServedError. When its usage
//     cannot be believed the ServedError carries zero usage and matches
//     agentrt.ErrUnusableUsage, so the accounting caller charges its estimate.
//
// Adapters never retry: retries belong to the accounting caller, which counts
// every attempt.
package providers
