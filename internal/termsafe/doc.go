// Package termsafe is the engine behind trace.Sanitize and
// trace.AppendTerminalSafeJSON: which runes a terminal would act on or
// hide, how each is escaped, and how combining marks stack. It is internal
// so that the observers in eventlog can print an event's JSON under the
// same rules (backslashes kept, as JSON already escapes them) without the
// trace package growing a public knob for it.
package termsafe
