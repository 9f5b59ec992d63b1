package adk

import (
	"context"
	"os"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// crashDirEnv, set, makes the test binary the crash child: it runs a
// governed ADK agent on the runs database in that directory whose write
// is allowed, says "started" on stdout once the write began, and holds it
// there until it is killed.
const crashDirEnv = "AGENTRT_ADK_CRASH_DIR"

func TestMain(m *testing.M) { os.Exit(adaptertest.CrashMain(m, crashDirEnv, crashChild)) }

func crashChild(dir string) error {
	r, err := buildRig(dir, adaptertest.CrashConfig(), Options{}, callTurn(writeCall("c-write", "second line")))
	if err != nil {
		return err
	}
	r.notes.HoldAppend()
	ctx := context.Background()
	if _, err := r.sessions.Create(ctx, &session.CreateRequest{AppName: testApp, UserID: testUser, SessionID: "s1"}); err != nil {
		return err
	}
	_, err = r.run(ctx, "s1", genai.NewContentFromText("add a line", genai.RoleUser))
	return err
}

// The real process is SIGKILLed while ADK's write tool runs under the gate.
// A restarted process whose model asks for the identical write runs nothing
// by itself: the run waits on exactly one approval, which says the call was
// cut off; the real agentrt binary approves it and the write runs once.
func TestGovern_AWriteCutOffBySIGKILLWaitsForOneApprovalAndRunsOnce(t *testing.T) {
	dir := t.TempDir()
	adaptertest.KillMidWrite(t, crashDirEnv, dir)
	r := newRig(t, dir, agentrt.DefaultPolicy(), Options{},
		callTurn(writeCall("c-write-again", "second line")), textTurn("done"))
	runID := r.session(t, "s1")
	r.AwaitLeaseLapse(t, runID)
	done := r.goRun("s1", genai.NewContentFromText("add a line", genai.RoleUser))
	r.CheckCutOffWriteRunsOnce(t, runID, r.notes.Notes, done)
}
