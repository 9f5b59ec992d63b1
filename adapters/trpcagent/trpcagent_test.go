package trpcagent

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
)

// One turn asks for a read and a write together, and trpc-agent-go runs
// them in parallel (llmagent.WithEnableParallelTools). The read runs while
// the write waits for an operator (it finishes before anyone decides); the
// real agentrt binary approves the write, which then runs exactly once,
// the model reads both results, and agentrt verify passes.
func TestGovern_AReadRunsAtOnceAndAWriteRunsOnceAfterTheOperatorApproves(t *testing.T) {
	r := newRig(t, t.TempDir(), agentrt.DefaultPolicy(), Options{},
		callTurn(readCall("c-read"), writeCall("c-write", "second line")), textTurn("done"))
	read := r.notes.ReadRan()
	runID := RunID(testApp, testUser, "s1")
	done := r.goRun("s1", "add a line")
	adaptertest.AwaitRead(t, read, done)
	r.ApproveTheWrite(t, runID, r.notes.Notes)
	adaptertest.Done(t, done)
	r.notes.CheckAppended(t, "second line")
	got := toolMessages(r.llm.lastRequest())
	if !strings.Contains(got["c-read"], `"text":"first line\n"`) {
		t.Errorf("the model got %q for the read", got["c-read"])
	}
	if !strings.Contains(got["c-write"], `"bytes":12`) {
		t.Errorf("the model got %q for the write, want its result", got["c-write"])
	}
	r.Operator(t, "verify")
}

// A policy that denies the write: the tool never runs and the model's next
// request holds the denial as the call's error.
func TestGovern_ADenialReachesTheModelAsTheToolError(t *testing.T) {
	policy := agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.RemoteMutation: agentrt.Deny}
	r := newRig(t, t.TempDir(), policy, Options{}, callTurn(writeCall("c-write", "x")), textTurn("understood"))
	if _, err := r.run(t.Context(), "s1", "add a line"); err != nil {
		t.Fatal(err)
	}
	if n := r.notes.Count("append_note"); n != 0 {
		t.Errorf("a denied append_note ran %d times", n)
	}
	got, ok := toolMessages(r.llm.lastRequest())["c-write"]
	if !ok {
		t.Fatal("the model got no tool message for the denied call")
	}
	if !strings.Contains(got, "denied") || strings.Contains(got, "bytes") {
		t.Errorf("the model got %q, want an error naming the denial", got)
	}
}

// A session restarted in a new process (a second rig on the same database,
// the same session id) whose model proposes the identical write under a
// new call id collects the pending approval instead of opening another,
// and runs the write once when it is granted. The first process's call
// used Interrupt mode: it ended at once, telling the model it waits.
func TestGovern_ARestartedSessionCollectsTheEarlierDecision(t *testing.T) {
	dir := t.TempDir()
	first := newRig(t, dir, agentrt.DefaultPolicy(), Options{Interrupt: true},
		callTurn(writeCall("c-1", "second line")), textTurn("waiting"))
	runID := RunID(testApp, testUser, "s1")
	if _, err := first.run(t.Context(), "s1", "add a line"); err != nil {
		t.Fatal(err)
	}
	before := first.UntilWaiting(t, runID)
	if len(before) != 1 {
		t.Fatalf("pending approvals %+v, want one", before)
	}
	if got := toolMessages(first.llm.lastRequest())["c-1"]; !strings.Contains(got, "pending") {
		t.Errorf("the model got %q for the interrupted call, want that it waits", got)
	}

	second := newRig(t, dir, agentrt.DefaultPolicy(), Options{}, callTurn(writeCall("c-2", "second line")), textTurn("done"))
	done := second.goRun("s1", "add a line")
	second.ApproveTheEarlier(t, runID, before[0])
	adaptertest.Done(t, done)
	if n := first.notes.Count("append_note") + second.notes.Count("append_note"); n != 1 {
		t.Errorf("append_note ran %d times, want 1", n)
	}
	if got := toolMessages(second.llm.lastRequest())["c-2"]; !strings.Contains(got, `"bytes"`) {
		t.Errorf("the model got %q for the collected call", got)
	}
}
