// Package testhook lets this module's tests, and package testkit, stop the
// engine where a crash would and move the clock a driver's or gate's leases
// are judged by.
//
// It is internal so that no consumer of the module can reach either: Go
// refuses the import to any package outside github.com/agentrt/agentrt/...
// A production process has no reason to stop itself at a crash point, and
// one that could move a driver's lease clock could take over a run whose
// lease is still live. Package agentrt calls [Crash] at each crash point
// and registers, in its init, how to set its drivers' and gates' clocks.
package testhook
