package agentrt

import (
	"time"

	"github.com/agentrt/agentrt/internal/testhook"
)

// The points where a test may stop a loop as a crash would; they are named,
// and described, in internal/testhook, which testkit shares.
const (
	pointStepStarted   = testhook.StepStarted
	pointDecided       = testhook.Decided
	pointAllowed       = testhook.Allowed
	pointToolStarted   = testhook.ToolStarted
	pointToolEffect    = testhook.ToolEffect
	pointToolFinished  = testhook.ToolFinished
	pointResumed       = testhook.Resumed
	pointAttachAllowed = testhook.AttachAllowed
	pointInterrupted   = testhook.Interrupted
)

// crashPoint calls the crash hook a test installed, if any, with the run
// and the step's index (-1 when no step applies). The hook and the lease
// clock below are set only through internal/testhook, so no program outside
// this module can stop the engine or move a lease clock.
func crashPoint(point, runID string, step int) { testhook.Crash(point, runID, step) }

func init() {
	testhook.RegisterWallClock(func(target any, wall func() time.Time) bool {
		switch t := target.(type) {
		case *Driver:
			t.e.wall = wall
		case *Gate:
			t.e.wall = wall
		default:
			return false
		}
		return true
	})
}
