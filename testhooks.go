package agentrt

import (
	"sync/atomic"
	"time"
)

// The points where a test may stop a loop as a crash would. Each is reached
// after a commit, never inside a transaction, so stopping there leaves the
// database exactly as a process killed at that instant would. testkit names
// them as its Point values.
const (
	pointStepStarted   = "step.started"       // a step is inserted, deciding
	pointDecided       = "step.decided"       // the decision is recorded
	pointAllowed       = "policy.allowed"     // the policy allowed; nothing started
	pointToolStarted   = "step.tool_started"  // the tool start is durable; the tool has not run
	pointToolEffect    = "tool.effect"        // the tool returned; its outcome is not recorded
	pointToolFinished  = "step.tool_finished" // the outcome is recorded
	pointResumed       = "run.resumed"        // a resume moved the run back to RUNNING
	pointAttachAllowed = "attach.allowed"     // an approved step is open for execution; the run still waits
	pointInterrupted   = "step.interrupted"   // a takeover marked in-flight steps interrupted
)

// crashHook is called at each crash point with the run and the step's
// index (-1 when no step applies). Nil, as in every production process, it
// does nothing.
var crashHook atomic.Pointer[func(point, runID string, step int)]

func crashPoint(point, runID string, step int) {
	if f := crashHook.Load(); f != nil {
		(*f)(point, runID, step)
	}
}

// SetTestHook is for tests only: package testkit uses it to stop a loop
// where a crash would. It installs f, process-wide, to be called at each of
// the engine's crash points with the point's name, the run, and the step's
// index (-1 when none applies); f may block or end its goroutine with
// runtime.Goexit. Nil removes the hook. restore puts back the hook that was
// installed before. A production program has no reason to call it.
func SetTestHook(f func(point, runID string, step int)) (restore func()) {
	var p *func(point, runID string, step int)
	if f != nil {
		p = &f
	}
	old := crashHook.Swap(p)
	return func() { crashHook.Store(old) }
}

// SetTestWallClock is for tests only: it replaces the clock d's leases are
// judged and written by (the wall clock, never Config.Now), so a test can
// let a lease lapse by moving a clock rather than by sleeping. Call it before
// d starts or resumes a run; f must be safe for concurrent use.
func SetTestWallClock(d *Driver, f func() time.Time) { d.e.wall = f }

// SetTestGateWallClock is SetTestWallClock for a Gate.
func SetTestGateWallClock(g *Gate, f func() time.Time) { g.e.wall = f }
