// Package testkit tests what a consumer builds on agentrt: its agent or
// gate loop under crashes, its policy against a table, and its tools
// against generated arguments.
//
// Run executes a scenario in a Driver (or a caller's gate loop), stops it
// as a crash would at the points the test names, closes the store, resumes
// the run in a fresh driver once the dead one's lease has lapsed, and
// checks the runtime's promises on what was recorded: no step executes
// twice on its own, an approved request executes at most once, every tool
// start is finished or interrupted, and no lease is left in flight.
//
// CheckPolicy judges a table of requests through the runtime's own
// validation and reports every disagreement as one table. Fuzz generates
// valid and boundary-invalid arguments from a tool's schema.
//
// Run installs a process-wide crash hook in the engine and moves the lease
// clocks of the drivers and gates it builds, through a package internal to
// this module, so no consumer can do either to a driver of its own; it
// serialises itself, and only the run it creates is affected, so it may
// share a test binary with other tests.
package testkit
