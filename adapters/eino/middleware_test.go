package eino

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// A real ChatModelAgent asks for a read and a write in one turn, then a
// delete, then answers. The write reaches the middleware only once the
// read opened its step (an outer middleware holds it: Eino's middleware
// cannot announce a turn, so a write proposed first would pause the run and
// hold the read, docs/adapters.md). The read runs at once, and finishes
// while the write waits for an operator (it is held until the approval is
// requested, so an adapter that serialised the two would never get there); the real agentrt
// binary approves the write, which then runs exactly once; the delete is
// denied by policy and the model reads that as the tool's answer; the
// chain verifies.
func TestMiddleware_ReadRunsWriteWaitsForTheBinaryAndRunsOnceDenialReachesTheModel(t *testing.T) {
	ctx := t.Context()
	r := newRig(t, t.TempDir(), Options{}, 0)
	requested := r.events.On(agentrt.EventApprovalRequest)
	r.notes.ReadHold = func() error {
		select {
		case <-requested:
			return nil
		case <-time.After(time.Minute):
			return errors.New("the read was held a minute: the write's approval was never requested alongside it")
		}
	}
	readOpened := r.events.On(agentrt.EventStepStarted)
	r.outer = &compose.ToolMiddleware{Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
			if in.Name == "append_note" {
				<-readOpened
			}
			return next(ctx, in)
		}
	}}
	llm := scripted([]*schema.Message{
		callTurn(call("call-read", "read_note", `{"name":"note"}`), call("call-write", "append_note", `{"text":"second line"}`)),
		callTurn(call("call-delete", "delete_note", `{"name":"note"}`)),
		schema.AssistantMessage("done", nil),
	})
	type result struct {
		final string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		final, _, err := events(r.runner(t, llm, &memStore{m: map[string][]byte{}}).Run(ctx,
			[]*schema.Message{schema.UserMessage("add a line")}, RunOptions("ck-1")...))
		done <- result{final, err}
	}()

	r.events.AwaitStatus(t, r.store, "ck-1", agentrt.RunWaiting)
	if got := r.notes.Count("read_note"); got != 1 {
		t.Fatalf("read_note ran %d times before the write was approved, want 1", got)
	}
	if got := r.notes.Count("append_note"); got != 0 {
		t.Fatalf("append_note ran %d times before approval, want 0", got)
	}
	a := r.pending(t, "ck-1")
	r.cli(t, "approve", "ck-1", "-approval", a.ID, "-by", "ops", "-note", "fine")

	var res result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not finish within a minute of the approval")
	}
	if res.err != nil || res.final != "done" {
		t.Fatalf("the run ended with %q, %v", res.final, res.err)
	}
	if got := r.notes.Count("append_note"); got != 1 {
		t.Errorf("append_note ran %d times, want exactly 1", got)
	}
	if got := r.notes.Count("delete_note"); got != 0 {
		t.Errorf("delete_note ran %d times, want 0", got)
	}
	if b, _ := os.ReadFile(r.notes.Path); string(b) != "first line\nsecond line\n" {
		t.Errorf("the note is %q", b)
	}
	turn1 := llm.toolMessagesAt(1)
	if !strings.Contains(turn1["call-read"], "first line") || turn1["call-write"] != "appended" {
		t.Errorf("the model read %q after the first turn", turn1)
	}
	if got := llm.toolMessagesAt(2)["call-delete"]; !strings.Contains(got, `"error"`) || !strings.Contains(got, string(agentrt.ObsPolicyDenied)) {
		t.Errorf("the model read %q for the delete, want the policy's denial as an error", got)
	}
	if err := r.gate.Complete(ctx, "ck-1", nil); err != nil {
		t.Fatal(err)
	}
	if run, err := r.store.GetRun(context.Background(), "ck-1"); err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("run ck-1 is %s, %v; want COMPLETED", run.Status, err)
	}
	r.cli(t, "verify")
}

// A tool the gate has a spec for but the middleware was given no class
// for is refused as a substitute result the model reads, and never runs:
// the class map handed to Middleware is the set of tools it governs.
func TestMiddleware_RefusesAToolMissingFromItsClassMap(t *testing.T) {
	ctx := t.Context()
	r := newRig(t, t.TempDir(), Options{}, 0)
	r.mw = Middleware(r.gate, map[string]agentrt.SideEffect{"append_note": agentrt.LocalMutation}, Options{})
	llm := scripted([]*schema.Message{
		callTurn(call("call-read", "read_note", `{"name":"note"}`)),
		schema.AssistantMessage("done", nil),
	})
	final, _, err := events(r.runner(t, llm, &memStore{m: map[string][]byte{}}).Run(ctx,
		[]*schema.Message{schema.UserMessage("read it")}, RunOptions("ck-classes")...))
	if err != nil || final != "done" {
		t.Fatalf("the run ended with %q, %v", final, err)
	}
	if got := r.notes.Count("read_note"); got != 0 {
		t.Errorf("read_note ran %d times though the middleware has no class for it", got)
	}
	if got := llm.toolMessages()["call-read"]; !strings.Contains(got, `"error"`) || !strings.Contains(got, "not among the tools") {
		t.Errorf("the model read %q, want a refusal naming the middleware's tools", got)
	}
}
