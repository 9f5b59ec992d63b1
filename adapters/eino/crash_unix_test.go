//go:build unix

package eino

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/cloudwego/eino/schema"
)

// crashDir, set in the environment, makes this test binary the child of
// the SIGKILL test, working in that directory.
const crashDir = "AGENTRT_EINO_CRASH_DIR"

// writeTurn is a script whose one turn asks for the write, then answers.
func writeTurn() *scriptedModel {
	return scripted([]*schema.Message{
		callTurn(call("call-write", "append_note", `{"text":"second line"}`)),
		schema.AssistantMessage("done", nil),
	})
}

// crashChild runs the agent; it says which approval its write waits on,
// and once the approved write has appended its line it says so and blocks
// until it is killed.
func crashChild(t *testing.T) {
	r := newRig(t, os.Getenv(crashDir), Options{}, 300*time.Millisecond)
	go func() {
		<-r.events.On(agentrt.EventApprovalRequest)
		fmt.Println("pending", r.pending(t, "ck-1").ID)
	}()
	r.notes.AfterAppend = func() {
		fmt.Println("effect")
		os.Stdout.Sync()
		select {} // the parent kills the process here
	}
	_, _, err := events(r.runner(t, writeTurn(), &memStore{m: map[string][]byte{}}).Run(context.Background(),
		[]*schema.Message{schema.UserMessage("add a line")}, RunOptions("ck-1")...))
	t.Fatalf("the child's run returned (%v); it should have been killed", err)
}

// A child process runs the agent; its write is approved with the real
// binary and killed with SIGKILL after it appended its line, before the
// outcome was recorded. A fresh process runs the same agent under the same
// checkpoint id: nothing runs without an operator, exactly one more
// approval is asked and it says the call was cut off, and approving it with
// the binary runs the write once.
func TestMiddleware_SIGKILLDuringAWriteAsksOneApprovalThenRunsItOnce(t *testing.T) {
	if os.Getenv(crashDir) != "" {
		crashChild(t)
		return
	}
	dir := t.TempDir()
	parent := newRig(t, dir, Options{}, 0)
	child := adaptertest.StartChild(t, "TestMiddleware_SIGKILLDuringAWriteAsksOneApprovalThenRunsItOnce", crashDir+"="+dir)
	parent.cli(t, "approve", "ck-1", "-approval", child.Line(t, "pending"), "-by", "ops")
	child.Line(t, "effect")
	child.Kill()

	llm := writeTurn()
	done := make(chan error, 1)
	go func() {
		_, _, err := events(parent.runner(t, llm, &memStore{m: map[string][]byte{}}).Run(t.Context(),
			[]*schema.Message{schema.UserMessage("add a line")}, RunOptions("ck-1")...))
		done <- err
	}()
	parent.events.Await(t, agentrt.EventApprovalRequest)
	a := parent.pending(t, "ck-1")
	if a.Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(a.Presentation), "may already have taken effect") {
		t.Fatalf("the approval after the crash is %s: %s", a.Kind, a.Presentation)
	}
	if got := parent.notes.Count("append_note"); got != 0 {
		t.Fatalf("the restarted process ran the write %d times without an operator", got)
	}
	parent.cli(t, "approve", "ck-1", "-approval", a.ID, "-by", "ops", "-note", "the line may be missing")
	if err := adaptertest.Recv(t, done, "end of the restarted run"); err != nil {
		t.Fatal(err)
	}
	if got := parent.notes.Count("append_note"); got != 1 {
		t.Errorf("the restarted process ran the write %d times, want 1", got)
	}
	if b, _ := os.ReadFile(parent.notes.Path); string(b) != "first line\nsecond line\nsecond line\n" {
		t.Errorf("the note is %q, want the child's line and one approved re-run", b)
	}
	apps, err := parent.store.ListApprovals(context.Background(), "ck-1")
	if err != nil || len(apps) != 2 {
		t.Errorf("run ck-1 has %d approvals (%v), want the policy's and the interruption's", len(apps), err)
	}
	parent.cli(t, "verify")
}
