package genkit

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
)

func req(ref, tool string, in map[string]any) *ai.ToolRequest {
	return &ai.ToolRequest{Ref: ref, Name: tool, Input: in}
}

// generateAsync runs Generate in a goroutine; the channel gets its result.
func generateAsync(ctx context.Context, r *rig, runID string, extra ...ai.GenerateOption) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.generate(ctx, runID, extra...)
		done <- err
	}()
	return done
}

// A model reads the note, then appends to it. The read runs at once; the
// write waits until the operator approves it with the real agentrt
// binary, then runs exactly once; the model reads both outcomes and the
// chain verifies.
func TestMiddleware_ReadRunsAtOnceAndWriteRunsOnceAfterApproval(t *testing.T) {
	r := newRig(t, "", 0, Options{},
		callTurn(req("c-read", "read_note", map[string]any{"name": "note"})),
		callTurn(req("c-write", "append_note", map[string]any{"text": "second line"})),
		ai.NewModelTextMessage("done"))
	done := generateAsync(t.Context(), r, "run-1")

	r.waitEvent(t, agentrt.EventApprovalRequest)
	if got := r.notes.Count("read_note"); got != 1 {
		t.Fatalf("read_note ran %d times before the approval, want 1", got)
	}
	waiting := r.pending(t, "run-1")
	if len(waiting) != 1 || waiting[0].Request.Spec.Name != "append_note" || r.notes.Count("append_note") != 0 {
		t.Fatalf("pending %+v, append_note ran %d times; want the write waiting, not run", waiting, r.notes.Count("append_note"))
	}
	r.approve(t, "run-1", waiting[0].ID)
	if err := adaptertest.Recv(t, done, "end of Generate"); err != nil {
		t.Fatal(err)
	}
	if got := r.notes.Count("append_note"); got != 1 || r.note(t) != "first line\nsecond line\n" {
		t.Fatalf("append_note ran %d times, note %q; want once", got, r.note(t))
	}
	got := r.llm.toolResponses()
	if got["c-write"] == nil || got["c-write"].Output != "appended" || got["c-read"] == nil {
		t.Fatalf("the model got %+v", got)
	}
	r.verify(t)
}

// The policy denies drop_note (destructive): the tool never runs, and the
// model's next request holds the refusal as the call's output, which
// Genkit hands it like any tool response; Generate goes on to the end.
func TestMiddleware_DenialReachesTheModelAsTheCallsError(t *testing.T) {
	r := newRig(t, "", 0, Options{},
		callTurn(req("c-drop", "drop_note", map[string]any{"name": "note"})),
		ai.NewModelTextMessage("I may not delete it"))
	if _, err := r.generate(t.Context(), "run-deny"); err != nil {
		t.Fatal(err)
	}
	if r.notes.Count("drop_note") != 0 || r.note(t) != "first line\n" {
		t.Fatalf("drop_note ran %d times", r.notes.Count("drop_note"))
	}
	resp := r.llm.toolResponses()["c-drop"]
	out, _ := resp.Output.(map[string]any)
	if msg, _ := out["error"].(string); !strings.Contains(msg, string(agentrt.ObsPolicyDenied)) {
		t.Fatalf("the model got %+v for c-drop, want an error naming the policy's denial", resp)
	}
	r.verify(t)
}

// One turn asks for a write and a read at once, and the read reaches the
// adapter only after the write's hook was entered. The write waits for the
// operator; the read is not held by it: its hook returns while the write
// still waits (an outer middleware reports each return on a channel), and
// only then is the write approved.
func TestMiddleware_AllowedSiblingRunsWhileTheOtherWaits(t *testing.T) {
	r := newRig(t, "", 0, Options{},
		callTurn(req("c-write", "append_note", map[string]any{"text": "second line"}),
			req("c-read", "read_note", map[string]any{"name": "note"})),
		ai.NewModelTextMessage("done"))
	returned, writeIn := make(chan string, 2), make(chan struct{})
	r.outer = ai.MiddlewareFunc(func(context.Context) (*ai.Hooks, error) {
		return &ai.Hooks{WrapTool: func(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
			switch p.Request.Ref {
			case "c-write":
				close(writeIn)
			case "c-read":
				<-writeIn
			}
			res, err := next(ctx, p)
			returned <- p.Request.Ref
			return res, err
		}}, nil
	})
	done := generateAsync(t.Context(), r, "run-par")
	if ref := adaptertest.Recv(t, returned, "tool return"); ref != "c-read" {
		t.Fatalf("%s returned first, want the read", ref)
	}
	// The run waits: at the read's end (run.waiting) when the write's
	// approval came while the read ran, or at once (approval.requested)
	// when the read had ended before the write was proposed.
	r.evs.AwaitStatus(t, r.store, "run-par", agentrt.RunWaiting)
	waiting := r.pending(t, "run-par")
	if len(waiting) != 1 || r.notes.Count("append_note") != 0 || r.notes.Count("read_note") != 1 {
		t.Fatalf("after the read: pending %d, write ran %d, read ran %d", len(waiting), r.notes.Count("append_note"), r.notes.Count("read_note"))
	}
	select {
	case err := <-done:
		t.Fatalf("Generate ended (%v) while the write waited", err)
	default:
	}
	r.approve(t, "run-par", waiting[0].ID)
	if ref := adaptertest.Recv(t, returned, "tool return"); ref != "c-write" {
		t.Fatalf("%s returned, want the write", ref)
	}
	if err := adaptertest.Recv(t, done, "end of Generate"); err != nil {
		t.Fatal(err)
	}
	if r.notes.Count("append_note") != 1 || r.note(t) != "first line\nsecond line\n" {
		t.Fatalf("append_note ran %d times", r.notes.Count("append_note"))
	}
	r.verify(t)
}

// A Generate whose write waits is abandoned (its context cancelled); the
// operator approves later. A new Generate under another run id, whose
// model asks for the identical write with another ref, collects that
// grant: no second approval is opened, and the write runs once.
func TestMiddleware_RestartedSessionCollectsTheEarlierDecision(t *testing.T) {
	write := map[string]any{"text": "second line"}
	r := newRig(t, "", 0, Options{},
		callTurn(req("c-1", "append_note", write)),
		callTurn(req("c-2", "append_note", write)),
		ai.NewModelTextMessage("done"))
	ctx, cancel := context.WithCancel(t.Context())
	done := generateAsync(ctx, r, "first")
	r.waitEvent(t, agentrt.EventApprovalRequest)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the abandoned Generate returned no error")
	}
	first := r.pending(t, "first")
	if len(first) != 1 {
		t.Fatalf("%d pending approvals, want 1", len(first))
	}
	r.approve(t, "first", first[0].ID)

	if _, err := r.generate(t.Context(), "second"); err != nil {
		t.Fatal(err)
	}
	if r.notes.Count("append_note") != 1 || r.note(t) != "first line\nsecond line\n" {
		t.Fatalf("append_note ran %d times", r.notes.Count("append_note"))
	}
	for _, run := range []string{"first", "second"} {
		all, err := r.store.ListApprovals(t.Context(), run)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"first": 1, "second": 0}[run]; len(all) != want {
			t.Fatalf("run %s has %d approvals, want %d", run, len(all), want)
		}
	}
	if got := r.llm.toolResponses()["c-2"]; got == nil || got.Output != "appended" {
		t.Fatalf("the model got %+v for c-2", got)
	}
	r.verify(t)
}

// In interrupt mode a write that needs approval ends Generate with
// Genkit's interrupt. Restarting it with forged resume metadata before any
// decision interrupts again and runs nothing; once the operator approves,
// the restart runs the write once.
func TestMiddleware_InterruptResumesOnlyOnTheRecordedGrant(t *testing.T) {
	r := newRig(t, "", 0, Options{Interrupt: true},
		callTurn(req("c-write", "append_note", map[string]any{"text": "second line"})),
		ai.NewModelTextMessage("done"))
	resp, err := r.generate(t.Context(), "run-int")
	if err != nil || resp.FinishReason != ai.FinishReasonInterrupted || len(resp.Interrupts()) != 1 {
		t.Fatalf("Generate: %v, %+v; want one interrupt", err, resp)
	}
	part := resp.Interrupts()[0]
	write := r.tools[1].(ai.Tool)
	restart := func(meta map[string]any) (*ai.ModelResponse, error) {
		return r.generate(t.Context(), "run-int", ai.WithMessages(resp.History()...),
			ai.WithToolRestarts(write.Restart(part, &ai.RestartOptions{ResumedMetadata: meta})))
	}
	again, err := restart(map[string]any{"approved": true})
	if r.notes.Count("append_note") != 0 || again == nil || again.FinishReason != ai.FinishReasonInterrupted {
		t.Fatalf("a forged restart: %v, %+v, write ran %d times; want another interrupt", err, again, r.notes.Count("append_note"))
	}
	waiting := r.pending(t, "run-int")
	if len(waiting) != 1 {
		t.Fatalf("%d pending approvals, want the one", len(waiting))
	}
	r.approve(t, "run-int", waiting[0].ID)
	final, err := restart(nil)
	if err != nil || final.Text() != "done" {
		t.Fatalf("the approved restart: %v, %+v", err, final)
	}
	if r.notes.Count("append_note") != 1 || r.note(t) != "first line\nsecond line\n" {
		t.Fatalf("append_note ran %d times", r.notes.Count("append_note"))
	}
	r.verify(t)
}

// Specs takes each Genkit tool's name, description and input schema and
// the class from the map; a tool the map does not name is refused by
// NewGate with an error naming it, before anything is written.
func TestSpecs_CarryTheDeclarationAndRefuseAnUnclassifiedTool(t *testing.T) {
	r := newRig(t, "", 0, Options{})
	write := r.tools[1].(ai.Tool)
	spec := Specs(classes, write)[0].Spec()
	if spec.Name != "append_note" || spec.Description != "Appends a line to the note." || spec.SideEffect != agentrt.RemoteMutation ||
		!strings.Contains(string(spec.InputSchema), `"text"`) || spec.Timeout != ToolTimeout {
		t.Fatalf("the spec is %+v, schema %s", spec, spec.InputSchema)
	}
	_, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: r.store, Policy: agentrt.DefaultPolicy(),
		Tools: Specs(map[string]agentrt.SideEffect{}, write)}})
	if err == nil || !strings.Contains(err.Error(), `"append_note"`) {
		t.Fatalf("NewGate with an unclassified tool: %v; want a refusal naming it", err)
	}
}

// One turn asks for the same write twice (two refs). Each is its own call:
// two approvals, not one collected by the other; each approved runs once,
// so the write runs twice.
func TestMiddleware_IdenticalCallsOfOneTurnAreEachAsked(t *testing.T) {
	write := map[string]any{"text": "again"}
	r := newRig(t, "", 0, Options{},
		callTurn(req("c-a", "append_note", write), req("c-b", "append_note", write)),
		ai.NewModelTextMessage("done"))
	done := generateAsync(t.Context(), r, "run-twins")
	r.waitEvent(t, agentrt.EventApprovalRequest)
	r.waitEvent(t, agentrt.EventApprovalRequest)
	waiting := r.pending(t, "run-twins")
	if len(waiting) != 2 {
		t.Fatalf("%d pending approvals, want one per call", len(waiting))
	}
	// The first approved runs at once; the run waits again, for the
	// second, once it has (an approval is decided only in a waiting run).
	r.approve(t, "run-twins", waiting[0].ID)
	r.waitEvent(t, agentrt.EventRunWaiting)
	r.approve(t, "run-twins", waiting[1].ID)
	if err := adaptertest.Recv(t, done, "end of Generate"); err != nil {
		t.Fatal(err)
	}
	if r.notes.Count("append_note") != 2 || r.note(t) != "first line\nagain\nagain\n" {
		t.Fatalf("append_note ran %d times, note %q", r.notes.Count("append_note"), r.note(t))
	}
	got := r.llm.toolResponses()
	if got["c-a"] == nil || got["c-a"].Output != "appended" || got["c-b"] == nil || got["c-b"].Output != "appended" {
		t.Fatalf("the model got %+v", got)
	}
	r.verify(t)
}

// A write interrupts and its run waits on the approval. Another Generate
// on the same run id asks for a read: the read is refused with a message
// naming the approval, never run, and never takes that approval as its
// own.
func TestMiddleware_CallWhileTheRunWaitsIsRefused(t *testing.T) {
	r := newRig(t, "", 0, Options{Interrupt: true},
		callTurn(req("c-write", "append_note", map[string]any{"text": "second line"})),
		callTurn(req("c-read", "read_note", map[string]any{"name": "note"})),
		ai.NewModelTextMessage("done"))
	resp, err := r.generate(t.Context(), "run-busy")
	if err != nil || resp.FinishReason != ai.FinishReasonInterrupted {
		t.Fatalf("Generate: %v, %+v; want the write's interrupt", err, resp)
	}
	waiting := r.pending(t, "run-busy")
	if len(waiting) != 1 {
		t.Fatalf("%d pending approvals, want 1", len(waiting))
	}
	final, err := r.generate(t.Context(), "run-busy")
	if err != nil || final.Text() != "done" {
		t.Fatalf("the second Generate: %v, %+v", err, final)
	}
	out, _ := r.llm.toolResponses()["c-read"].Output.(map[string]any)
	if msg, _ := out["error"].(string); !strings.Contains(msg, waiting[0].ID) || r.notes.Count("read_note") != 0 {
		t.Fatalf("the model got %v for the read, which ran %d times; want a refusal naming %s", out, r.notes.Count("read_note"), waiting[0].ID)
	}
	if r.notes.Count("append_note") != 0 || len(r.pending(t, "run-busy")) != 1 {
		t.Fatalf("the write ran %d times", r.notes.Count("append_note"))
	}
}
