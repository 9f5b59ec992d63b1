package eino

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// One model response asks for a write first and two reads after it; a
// real ChatModelAgent with Handler among its handlers runs them in
// parallel, and an outer middleware lets the reads reach the gate only
// after the write opened its step. The write waits for its turn: the
// policy judges it after both reads (without the handler, before either,
// and the reads then wait for the operator too). The reads run and return
// while the write waits; the real binary approves it, and it runs once.
func TestHandler_ReadsOfAWritesTurnRunWhileItWaitsForApproval(t *testing.T) {
	ctx := t.Context()
	r := newRig(t, t.TempDir(), Options{TurnWait: adaptertest.Wait}, 0)
	r.handlers = []adk.ChatModelAgentMiddleware{Handler(r.gate, classes)}
	var readsJudged atomic.Int64
	writeJudged := make(chan int64, 1)
	r.judged = func(tool string) {
		if tool == "read_note" {
			readsJudged.Add(1)
			return
		}
		select {
		case writeJudged <- readsJudged.Load():
		default: // judged again at its grant
		}
	}
	opened, returned := r.events.On(agentrt.EventStepStarted), make(chan string, 3)
	r.outer = &compose.ToolMiddleware{Invokable: func(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
		return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
			if in.Name == "read_note" {
				select { // the reads are held until the write's step opened
				case <-opened:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			out, err := next(ctx, in)
			returned <- in.CallID
			return out, err
		}
	}}
	llm := scripted([]*schema.Message{
		callTurn(call("call-write", "append_note", `{"text":"second line"}`),
			call("call-read-1", "read_note", `{"name":"note"}`), call("call-read-2", "read_note", `{"name":"note"}`)),
		schema.AssistantMessage("done", nil),
	})
	done, ended := make(chan error, 1), make(chan struct{})
	t.Cleanup(func() { <-ended }) // the run stops using the store before it closes
	go func() {
		defer close(ended)
		final, _, err := events(r.runner(t, llm, &memStore{m: map[string][]byte{}}).Run(ctx,
			[]*schema.Message{schema.UserMessage("read, then add a line")}, RunOptions("ck-turn")...))
		if err == nil && final != "done" {
			err = fmt.Errorf("the run ended with %q", final)
		}
		done <- err
	}()

	if n := adaptertest.Recv(t, writeJudged, "the write's judgement"); n != 2 {
		t.Fatalf("the write was judged after %d of its turn's 2 reads: it did not wait for its turn", n)
	}
	for range 2 {
		if id := adaptertest.Recv(t, returned, "a read's return"); !strings.HasPrefix(id, "call-read-") {
			t.Fatalf("%s returned before the write was approved", id)
		}
	}
	r.events.AwaitStatus(t, r.store, "ck-turn", agentrt.RunWaiting)
	if w, rd := r.notes.Count("append_note"), r.notes.Count("read_note"); w != 0 || rd != 2 {
		t.Fatalf("before the approval append_note ran %d times and read_note %d, want 0 and 2", w, rd)
	}
	a := r.pending(t, "ck-turn")
	r.cli(t, "approve", "ck-turn", "-approval", a.ID, "-by", "ops")
	if id := adaptertest.Recv(t, returned, "the write's return"); id != "call-write" {
		t.Fatalf("%s returned, want the write", id)
	}
	if err := adaptertest.Recv(t, done, "the run's end"); err != nil {
		t.Fatal(err)
	}
	if got := r.notes.Count("append_note"); got != 1 {
		t.Errorf("append_note ran %d times, want exactly 1", got)
	}
	turn := llm.toolMessagesAt(1)
	if turn["call-write"] != "appended" || !strings.Contains(turn["call-read-1"], "first line") || !strings.Contains(turn["call-read-2"], "first line") {
		t.Errorf("the model read %q after the turn", turn)
	}
	if err := r.gate.Complete(ctx, "ck-turn", nil); err != nil {
		t.Fatal(err)
	}
	r.cli(t, "verify")
}
