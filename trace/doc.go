// Package trace makes text that a model, a policy or a server chose safe to
// print on an operator's terminal.
//
// Sanitize is the one rule for such text: it escapes controls, line breaks,
// bidirectional and invisible formatting characters, and cuts floods of
// combining marks, while ordinary text in any script and emoji pass unchanged.
// Every surface that prints untrusted text uses it, so a tool name, an error
// message or a payload cannot forge a line, clear the screen, or reorder what
// the operator reads.
//
// The package does not import the root package, so every package, the
// root included, can use it. The observers that print events with it are in
// eventlog.
package trace
