// Package eventlog prints events as they commit, as agentrt.Observers:
// Writer prints one aligned line per event for people, JSONL one JSON
// object per event for programs. Every string a model, a policy or a server
// chose is printed under trace.Sanitize's rules, so a line is safe on a
// terminal. Both are safe for concurrent use and write each event with a
// single Write.
package eventlog
