// Package console is agentrt's web operator console: the inbox of waiting
// approvals across runs, an approval shown field by field, runs and their
// timelines, and the event chain, served from embedded html/template pages
// and one small script. Approvers enroll a passkey with a one-time
// invitation, sign in with it, and approve or reject with a fresh passkey
// assertion over the decision's statement, which the core records and
// verifies (agentrt.WithSignature).
//
// It is a nested module so that the core never links the WebAuthn library
// it uses for the ceremonies (github.com/go-webauthn/webauthn). Every
// decision goes through agentrt.Operator's ApproveShown or RejectShown
// with the hash the page showed.
package console
