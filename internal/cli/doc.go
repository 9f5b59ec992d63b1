// Package cli is the agentrt command line: runs, show, events, approve,
// reject, cancel, verify, version, demo and resume, one file each. main
// only calls Run.
//
// Every command parses, then validates every argument, then opens the
// database, and opens only an existing one (sqlite.OpenExisting), read-only
// for the commands that only read. A refusal to open is one sentence at
// exit 1. Text output passes everything a model, a policy or a server chose
// through trace.Sanitize and bounds each field; -json writes JSON Lines
// whose strings are escaped the same way. Commands read only the page they
// print.
package cli
