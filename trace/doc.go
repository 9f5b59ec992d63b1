// Package trace prints events and other text that a model, a policy or a
// server chose, in a form that is safe for an operator's terminal.
//
// Sanitize is the one rule for such text: it escapes controls, line breaks,
// bidirectional and invisible formatting characters, and cuts floods of
// combining marks, while ordinary text in any script and emoji pass unchanged.
// Every surface that prints untrusted text uses it, so a tool name, an error
// message or a payload cannot forge a line, clear the screen, or reorder what
// the operator reads.
//
// Writer and JSONL are Observers: Writer prints one aligned, sanitized line per
// event for people; JSONL writes one JSON object per event for programs. Both
// are safe for concurrent use and write each event with a single Write.
package trace
