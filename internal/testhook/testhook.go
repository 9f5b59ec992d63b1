package testhook

import (
	"fmt"
	"sync/atomic"
	"time"
)

// The points where a test may stop a loop as a crash would. Each is reached
// after a commit, never inside a transaction, so stopping there leaves the
// database exactly as a process killed at that instant would. testkit names
// them as its Point values.
const (
	StepStarted   = "step.started"       // a step is inserted, deciding
	Decided       = "step.decided"       // the decision is recorded
	Allowed       = "policy.allowed"     // the policy allowed; nothing started
	ToolStarted   = "step.tool_started"  // the tool start is durable; the tool has not run
	ToolEffect    = "tool.effect"        // the tool returned; its outcome is not recorded
	ToolFinished  = "step.tool_finished" // the outcome is recorded
	Resumed       = "run.resumed"        // a resume moved the run back to RUNNING
	AttachAllowed = "attach.allowed"     // an approved step is open for execution; the run still waits
	Interrupted   = "step.interrupted"   // a takeover marked in-flight steps interrupted
)

// Func is a crash hook: it is called with the point's name, the run, and
// the step's index (-1 when no step applies). It may block, or end its
// goroutine with runtime.Goexit.
type Func func(point, runID string, step int)

var crash atomic.Pointer[Func]

// Set installs f, process-wide, as the crash hook. Nil removes it. restore
// puts back the hook installed before.
func Set(f Func) (restore func()) {
	var p *Func
	if f != nil {
		p = &f
	}
	old := crash.Swap(p)
	return func() { crash.Store(old) }
}

// Crash calls the installed hook, if any, at point. With none installed, as
// in every production process, it does nothing.
func Crash(point, runID string, step int) {
	if f := crash.Load(); f != nil {
		(*f)(point, runID, step)
	}
}

// wallSetter sets the lease clock of a *agentrt.Driver or *agentrt.Gate and
// reports whether target was one. Package agentrt registers it.
var wallSetter atomic.Pointer[func(target any, wall func() time.Time) bool]

// RegisterWallClock is called once, by package agentrt's init, with the
// function that sets a driver's or gate's lease clock.
func RegisterWallClock(set func(target any, wall func() time.Time) bool) {
	wallSetter.Store(&set)
}

// SetWallClock replaces the clock target's leases are judged and written by
// (the wall clock, never Config.Now), so a test can let a lease lapse by
// moving a clock rather than by sleeping. target is a *agentrt.Driver or a
// *agentrt.Gate; call it before target starts, resumes, begins or attaches
// a run. wall must be safe for concurrent use. Any other target panics: it
// is a mistake in a test.
func SetWallClock(target any, wall func() time.Time) {
	set := wallSetter.Load()
	if set == nil || !(*set)(target, wall) {
		panic(fmt.Sprintf("testhook: cannot set the lease clock of a %T", target))
	}
}
