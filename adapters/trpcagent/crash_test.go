package trpcagent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
)

// crashDirEnv, set, makes the test binary the crash child: it runs a
// governed trpc-agent-go agent on the runs database in that directory
// whose write is allowed, says "started" on stdout once the write began,
// and holds it there until it is killed.
const crashDirEnv = "AGENTRT_TRPCAGENT_CRASH_DIR"

// crashLease is the child's lease, short so the restart need not wait long
// for it to lapse.
const crashLease = 2 * time.Second

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(adaptertest.Main(m))
}

func crashChild(dir string) {
	allow := agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.RemoteMutation: agentrt.Allow}
	r, err := buildRig(dir, agentrt.EngineConfig{Policy: allow, LeaseTTL: crashLease}, Options{},
		callTurn(writeCall("c-write", "second line")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r.notes.OnCall = func(tool string) {
		if tool != "append_note" {
			return
		}
		fmt.Println("started")
		select {} // held until SIGKILL
	}
	_, err = r.run(context.Background(), "s1", "add a line")
	fmt.Fprintln(os.Stderr, "the crash child's run returned:", err)
	os.Exit(1)
}

// The real process is SIGKILLed while the framework's write tool runs
// under the gate. A restarted process whose model asks for the identical
// write runs nothing by itself: the run waits on exactly one approval,
// which says the call was cut off; the real agentrt binary approves it and
// the write runs once.
func TestGovern_AWriteCutOffBySIGKILLWaitsForOneApprovalAndRunsOnce(t *testing.T) {
	dir := t.TempDir()
	child := adaptertest.StartChild(t, "", crashDirEnv+"="+dir)
	child.Line(t, "started")
	child.Kill()
	r := newRig(t, dir, agentrt.DefaultPolicy(), Options{},
		callTurn(writeCall("c-write-again", "second line")), textTurn("done"))
	runID := RunID(testApp, testUser, "s1")
	// The dead child's lease is still recorded: the restart comes after it
	// lapses, as a supervisor's would.
	killed, err := r.store.GetRun(t.Context(), runID)
	if err != nil || killed.Status != agentrt.RunRunning {
		t.Fatalf("after SIGKILL the run is %+v, %v; want it RUNNING under the child's lease", killed.Status, err)
	}
	time.Sleep(time.Until(killed.LeaseExpiresAt) + 10*time.Millisecond)
	done := r.goRun("s1", "add a line")
	pending := r.untilWaiting(t, runID)
	if all := r.approvals(t, runID, ""); len(all) != 1 || len(pending) != 1 {
		t.Fatalf("approvals %+v, want exactly one, pending", all)
	}
	a := pending[0]
	if a.Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(a.Presentation), "outcome is unknown") {
		t.Errorf("the approval is %s %s, want one that says the call was cut off", a.Kind, a.Presentation)
	}
	if n := r.notes.Count("append_note"); n != 0 {
		t.Fatalf("the cut-off write ran again %d times without an operator", n)
	}
	r.operator(t, "approve", runID, "-approval", a.ID, "-by", "tester")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := r.notes.Count("append_note"); n != 1 {
		t.Errorf("append_note ran %d times after the approval, want 1", n)
	}
	if b, _ := os.ReadFile(r.notes.Path); string(b) != "first line\nsecond line\n" {
		t.Errorf("the note is %q", b)
	}
	if all := r.approvals(t, runID, ""); len(all) != 1 {
		t.Errorf("the run asked %d approvals in all, want 1", len(all))
	}
	r.operator(t, "verify")
}
