package eino

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/schema"
)

// A framework session's write waits for approval and the session is
// abandoned. A restarted session under a new checkpoint id proposes the
// identical write (with a new call id): it collects the earlier run's
// approval, which the binary grants, and the write runs once there; the
// new run asks for nothing.
func TestMiddleware_ARestartedSessionCollectsTheEarlierDecision(t *testing.T) {
	dir := t.TempDir()
	first := newRig(t, dir, Options{}, 0)
	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		events(first.runner(t, writeTurn(), &memStore{m: map[string][]byte{}}).Run(ctx,
			[]*schema.Message{schema.UserMessage("add a line")}, RunOptions("ck-1")...))
	}()
	first.events.Await(t, agentrt.EventApprovalRequest)
	cancel()
	<-gone
	a := first.pending(t, "ck-1")
	first.gate.Close()

	second := newRig(t, dir, Options{}, 0)
	llm := scripted([]*schema.Message{
		callTurn(call("call-write-again", "append_note", `{"text":"second line"}`)),
		schema.AssistantMessage("done", nil),
	})
	done := make(chan error, 1)
	go func() {
		_, _, err := events(second.runner(t, llm, &memStore{m: map[string][]byte{}}).Run(t.Context(),
			[]*schema.Message{schema.UserMessage("add a line")}, RunOptions("ck-2")...))
		done <- err
	}()
	second.cli(t, "approve", "ck-1", "-approval", a.ID, "-by", "ops")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the restarted session did not finish within a minute of the approval")
	}
	if got := second.notes.Count("append_note"); got != 1 {
		t.Errorf("the write ran %d times, want 1", got)
	}
	if got := llm.toolMessagesAt(1)["call-write-again"]; got != "appended" {
		t.Errorf("the restarted session's model read %q", got)
	}
	if apps, err := second.store.ListApprovals(context.Background(), "ck-2"); err != nil || len(apps) != 0 {
		t.Errorf("the restarted run asked %d approvals (%v), want none", len(apps), err)
	}
	if b, _ := os.ReadFile(second.notes.Path); string(b) != "first line\nsecond line\n" {
		t.Errorf("the note is %q", b)
	}
	second.cli(t, "verify")
}

// In interrupt mode a pending write raises Eino's own interrupt and the
// run stops with the checkpoint saved. Resuming before an operator decides
// interrupts again, whatever the resume says; once the binary approves,
// resuming runs the write once.
func TestMiddleware_InterruptModeResumesOnlyOnTheRecordedGrant(t *testing.T) {
	ctx := t.Context()
	r := newRig(t, t.TempDir(), Options{Interrupt: true}, 0)
	cps := &memStore{m: map[string][]byte{}}
	runner := r.runner(t, writeTurn(), cps)
	_, ids, err := events(runner.Run(ctx, []*schema.Message{schema.UserMessage("add a line")}, RunOptions("ck-3")...))
	if err != nil || len(ids) != 1 {
		t.Fatalf("the first run: interrupted at %q, %v", ids, err)
	}
	// The resume claims an approval; the middleware reads only the record.
	iter, err := runner.ResumeWithParams(ctx, "ck-3", &adk.ResumeParams{Targets: map[string]any{ids[0]: "approved"}}, RunOptions("ck-3")...)
	if err != nil {
		t.Fatal(err)
	}
	if _, interrupted, err := events(iter); err != nil || len(interrupted) != 1 {
		t.Fatalf("a resume before the decision: interrupted %v, %v", interrupted, err)
	}
	if got := r.notes.Count("append_note"); got != 0 {
		t.Fatalf("the write ran %d times before an operator decided", got)
	}
	r.cli(t, "approve", "ck-3", "-approval", r.pending(t, "ck-3").ID, "-by", "ops")
	iter, err = runner.Resume(ctx, "ck-3", RunOptions("ck-3")...)
	if err != nil {
		t.Fatal(err)
	}
	if final, interrupted, err := events(iter); err != nil || len(interrupted) != 0 || final != "done" {
		t.Fatalf("the resume after approval: %q, interrupted %v, %v", final, interrupted, err)
	}
	if got := r.notes.Count("append_note"); got != 1 {
		t.Errorf("the write ran %d times, want 1", got)
	}
	if apps, err := r.store.ListApprovals(ctx, "ck-3"); err != nil || len(apps) != 1 {
		t.Errorf("run ck-3 has %d approvals (%v), want 1", len(apps), err)
	}
}
