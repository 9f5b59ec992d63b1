package adk

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

func writeCall(id, text string) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: "append_note", Args: map[string]any{"text": text}}
}

func readCall(id string) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: "read_note", Args: map[string]any{"name": "note"}}
}

// One turn asks for a read and a write together. The read runs while the
// write waits for an operator (it finishes before anyone decides); the
// real agentrt binary approves the write, which then runs exactly once,
// the model reads both results, and agentrt verify passes.
func TestGovern_AReadRunsAtOnceAndAWriteRunsOnceAfterTheOperatorApproves(t *testing.T) {
	r := newRig(t, t.TempDir(), agentrt.DefaultPolicy(), Options{},
		callTurn(readCall("c-read"), writeCall("c-write", "second line")), textTurn("done"))
	read := r.notes.ReadRan()
	runID := r.session(t, "s1")
	done := r.goRun("s1", genai.NewContentFromText("add a line", genai.RoleUser))
	adaptertest.AwaitRead(t, read, done)
	r.ApproveTheWrite(t, runID, r.notes.Notes)
	adaptertest.Done(t, done)
	r.notes.CheckAppended(t, "second line")
	got := responses(r.llm.lastRequest())
	if got["c-read"] == nil || got["c-read"].Response["text"] != "first line\n" {
		t.Errorf("the model got %+v for the read", got["c-read"])
	}
	if got["c-write"] == nil || got["c-write"].Response["bytes"] != float64(len("second line\n")) {
		t.Errorf("the model got %+v for the write, want its result", got["c-write"])
	}
	r.Operator(t, "verify")
}

// A policy that denies the write: the tool never runs and the model's next
// request holds the denial as the call's error.
func TestGovern_ADenialReachesTheModelAsTheToolError(t *testing.T) {
	policy := agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.RemoteMutation: agentrt.Deny}
	r := newRig(t, t.TempDir(), policy, Options{}, callTurn(writeCall("c-write", "x")), textTurn("understood"))
	r.session(t, "s1")
	if _, err := r.run(t.Context(), "s1", genai.NewContentFromText("add a line", genai.RoleUser)); err != nil {
		t.Fatal(err)
	}
	if n := r.notes.Count("append_note"); n != 0 {
		t.Errorf("a denied append_note ran %d times", n)
	}
	got := responses(r.llm.lastRequest())["c-write"]
	if got == nil {
		t.Fatal("the model got no response for the denied call")
	}
	msg, _ := got.Response["error"].(string)
	if !strings.Contains(msg, "denied") {
		t.Errorf("the model got %+v, want an error naming the denial", got.Response)
	}
}

// Interrupt mode: the write raises ADK's confirmation and the turn ends.
// Resuming with ADK's {"confirmed": true} while agentrt holds no grant runs
// nothing, and the model reads that the call still waits; once the operator
// approves, the model's identical call runs once under that grant.
func TestGovern_InterruptModeTakesOnlyTheRecordedGrant(t *testing.T) {
	r := newRig(t, t.TempDir(), agentrt.DefaultPolicy(), Options{Interrupt: true},
		callTurn(writeCall("c-write", "second line")), textTurn("still waiting"),
		callTurn(writeCall("c-write-2", "second line")), textTurn("done"))
	runID := r.session(t, "s1")
	evs, err := r.run(t.Context(), "s1", genai.NewContentFromText("add a line", genai.RoleUser))
	if err != nil {
		t.Fatal(err)
	}
	confirm := confirmationCall(evs)
	if confirm == nil {
		t.Fatal("the turn raised no ADK confirmation")
	}
	// ADK's own answer says yes; agentrt has not been asked.
	if _, err := r.run(t.Context(), "s1", confirmed(confirm.ID)); err != nil {
		t.Fatal(err)
	}
	if n := r.notes.Count("append_note"); n != 0 {
		t.Fatalf("append_note ran %d times on ADK's confirmation alone", n)
	}
	if got := responses(r.llm.lastRequest())["c-write"]; got == nil || !strings.Contains(fmt.Sprint(got.Response["error"]), "still pending") {
		t.Fatalf("the model got %+v for the confirmed call, want that it still waits", got)
	}
	pending := r.UntilWaiting(t, runID)
	if len(pending) != 1 {
		t.Fatalf("pending approvals %+v, want one", pending)
	}
	r.Operator(t, "approve", runID, "-approval", pending[0].ID, "-by", "tester")
	if _, err := r.run(t.Context(), "s1", genai.NewContentFromText("go on", genai.RoleUser)); err != nil {
		t.Fatal(err)
	}
	if n := r.notes.Count("append_note"); n != 1 {
		t.Errorf("append_note ran %d times after the grant, want 1", n)
	}
	if all := r.Approvals(t, runID, ""); len(all) != 1 {
		t.Errorf("the run has %d approvals, want the one", len(all))
	}
}

// A session restarted in a new process (a second rig on the same database,
// the same ADK session id) whose model proposes the identical write under
// a new call id collects the pending approval instead of opening another.
func TestGovern_ARestartedSessionCollectsTheEarlierDecision(t *testing.T) {
	dir := t.TempDir()
	first := newRig(t, dir, agentrt.DefaultPolicy(), Options{Interrupt: true}, callTurn(writeCall("c-1", "second line")))
	runID := first.session(t, "s1")
	if _, err := first.run(t.Context(), "s1", genai.NewContentFromText("add a line", genai.RoleUser)); err != nil {
		t.Fatal(err)
	}
	before := first.UntilWaiting(t, runID)
	if len(before) != 1 {
		t.Fatalf("pending approvals %+v, want one", before)
	}

	second := newRig(t, dir, agentrt.DefaultPolicy(), Options{}, callTurn(writeCall("c-2", "second line")), textTurn("done"))
	second.session(t, "s1")
	done := second.goRun("s1", genai.NewContentFromText("add a line", genai.RoleUser))
	second.ApproveTheEarlier(t, runID, before[0])
	adaptertest.Done(t, done)
	if n := second.notes.Count("append_note"); n != 1 {
		t.Errorf("append_note ran %d times, want 1", n)
	}
	if got := responses(second.llm.lastRequest())["c-2"]; got == nil || got.Response["bytes"] == nil {
		t.Errorf("the model got %+v for the collected call", got)
	}
}

// confirmationCall is the ADK confirmation request among evs, or nil.
func confirmationCall(evs []*session.Event) *genai.FunctionCall {
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName {
				return p.FunctionCall
			}
		}
	}
	return nil
}

// confirmed is ADK's own yes to the confirmation call id.
func confirmed(id string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		Name: toolconfirmation.FunctionCallName, ID: id, Response: map[string]any{"confirmed": true}}}}}
}
