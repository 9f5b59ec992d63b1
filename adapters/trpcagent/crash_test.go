package trpcagent

import (
	"context"
	"os"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
)

// crashDirEnv, set, makes the test binary the crash child: it runs a
// governed trpc-agent-go agent on the runs database in that directory
// whose write is allowed, says "started" on stdout once the write began,
// and holds it there until it is killed.
const crashDirEnv = "AGENTRT_TRPCAGENT_CRASH_DIR"

func TestMain(m *testing.M) { os.Exit(adaptertest.CrashMain(m, crashDirEnv, crashChild)) }

func crashChild(dir string) error {
	r, err := buildRig(dir, adaptertest.CrashConfig(), Options{}, callTurn(writeCall("c-write", "second line")))
	if err != nil {
		return err
	}
	r.notes.HoldAppend()
	_, err = r.run(context.Background(), "s1", "add a line")
	return err
}

// The real process is SIGKILLed while the framework's write tool runs
// under the gate. A restarted process whose model asks for the identical
// write runs nothing by itself: the run waits on exactly one approval,
// which says the call was cut off; the real agentrt binary approves it and
// the write runs once.
func TestGovern_AWriteCutOffBySIGKILLWaitsForOneApprovalAndRunsOnce(t *testing.T) {
	dir := t.TempDir()
	adaptertest.KillMidWrite(t, crashDirEnv, dir)
	r := newRig(t, dir, agentrt.DefaultPolicy(), Options{},
		callTurn(writeCall("c-write-again", "second line")), textTurn("done"))
	runID := RunID(testApp, testUser, "s1")
	r.AwaitLeaseLapse(t, runID)
	done := r.goRun("s1", "add a line")
	r.CheckCutOffWriteRunsOnce(t, runID, r.notes.Notes, done)
}
