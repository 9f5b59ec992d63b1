//go:build unix

package genkit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
)

// The child of the SIGKILL test is this test binary run again with childDB
// naming the rig's directory.
const childDB = "AGENTRT_GENKIT_CRASH_DIR"

// crashScript is what the model asks in the parent and in the child.
func crashScript() []*ai.Message {
	return []*ai.Message{
		callTurn(req("c-write", "append_note", map[string]any{"text": "second line"})),
		ai.NewModelTextMessage("done"),
	}
}

// crashChild runs Generate on the rig in the given directory with a short
// lease; it prints "pending ID" when the write waits and "started" when the
// approved write's tool has begun, then blocks there until killed.
func crashChild(t *testing.T) {
	r := newRig(t, os.Getenv(childDB), 500*time.Millisecond, Options{}, crashScript()...)
	r.notes.OnCall = func(tool string) {
		if tool == "append_note" {
			fmt.Println("started")
			select {} // the parent kills the process here
		}
	}
	go func() {
		e := r.waitEvent(t, agentrt.EventApprovalRequest)
		fmt.Println("pending", e.RunID)
	}()
	_, err := r.generate(context.Background(), "run-crash")
	t.Fatalf("the child's Generate returned %v; it should have been killed", err)
}

// A Generate's write is approved and its tool starts in a child process,
// which is killed with SIGKILL before the outcome is recorded. A restarted
// Generate with the same run id runs nothing by itself: the call waits on
// exactly one approval, which says the call was cut off. Approving it with
// the real binary runs the write once.
func TestMiddleware_SIGKILLDuringAWriteWaitsForOneApproval(t *testing.T) {
	if os.Getenv(childDB) != "" {
		crashChild(t)
		return
	}
	parent := newRig(t, "", 0, Options{}, crashScript()...)
	child := adaptertest.StartChild(t, "TestMiddleware_SIGKILLDuringAWriteWaitsForOneApproval", childDB+"="+parent.dir)
	child.Line(t, "pending")
	parent.approve(t, "run-crash", parent.pending(t, "run-crash")[0].ID)
	child.Line(t, "started")
	child.Kill()

	// Wait out the dead child's lease: at most its TTL.
	run, err := parent.store.GetRun(t.Context(), "run-crash")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(run.LeaseExpiresAt) + 10*time.Millisecond)
	done := generateAsync(t.Context(), parent, "run-crash")
	parent.waitEvent(t, agentrt.EventApprovalRequest)
	waiting := parent.pending(t, "run-crash")
	if len(waiting) != 1 || waiting[0].Kind != agentrt.InterruptedSideEffect ||
		!strings.Contains(string(waiting[0].Presentation), "may already have taken effect") {
		t.Fatalf("pending after the restart: %+v; want one approval saying the call was cut off", waiting)
	}
	if parent.notes.Count("append_note") != 0 || parent.note(t) != "first line\n" {
		t.Fatalf("the restart ran the write without an operator")
	}
	select {
	case err := <-done:
		t.Fatalf("the restarted Generate ended (%v) before the operator decided", err)
	default:
	}
	parent.approve(t, "run-crash", waiting[0].ID)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if parent.notes.Count("append_note") != 1 || parent.note(t) != "first line\nsecond line\n" {
		t.Fatalf("append_note ran %d times after the approval, note %q", parent.notes.Count("append_note"), parent.note(t))
	}
	if all, _ := parent.store.ListApprovals(t.Context(), "run-crash"); len(all) != 2 {
		t.Fatalf("%d approvals, want the policy's and the interruption's", len(all))
	}
	parent.verify(t)
}
