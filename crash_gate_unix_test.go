//go:build unix

package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// The gate child of the SIGKILL test is this test binary run again with
// these variables set.
const (
	gkChildDB   = "AGENTRT_TEST_GATE_CRASH_DB"
	gkChildFile = "AGENTRT_TEST_GATE_CRASH_FILE"
)

// gkSpec is the spec-only tool whose body the caller supplies: a remote
// write, which the default policy sends to an operator.
var gkSpec = agentrt.ToolSpec{Name: "post", Description: "post a line", SideEffect: agentrt.RemoteMutation, Timeout: time.Minute,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}

// gkBody appends the call's text to path and syncs it; then it calls then.
func gkBody(path string, then func()) agentrt.ToolBody {
	return func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		var a struct{ Text string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		if err := appendSynced(path, a.Text); err != nil {
			return nil, err
		}
		if then != nil {
			then()
		}
		return json.RawMessage(`{"posted":true}`), nil
	}
}

func gkGate(t *testing.T, st agentrt.Store, owner string, ttl time.Duration) *agentrt.Gate {
	t.Helper()
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{agentrt.SpecOnly(gkSpec)}, LeaseTTL: ttl, LeaseOwner: owner}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gkCrashChild is the child: it attaches to the approved run, runs the
// caller's body until the line is written, says so, and blocks until it is
// killed.
func gkCrashChild(t *testing.T) {
	st := openAt(t, os.Getenv(gkChildDB))
	g := gkGate(t, st, "child", lkChildTTL)
	s, v, err := g.Attach(context.Background(), "gate-crash")
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("the child's Attach: %s, %v", v.Outcome, err)
	}
	step, _ := s.StepByCallID("call-1")
	_, err = step.ExecuteFunc(context.Background(), gkBody(os.Getenv(gkChildFile), effectThenHang))
	t.Fatalf("the child's ExecuteFunc returned %v; it should have been killed", err)
}

// A framework's call, registered by spec only, is approved; a child
// process attaches and runs the caller's body, which writes a line, and is
// killed with SIGKILL before the outcome is recorded. Once the child's
// lease lapses, Attach in the parent never calls the body again: the step
// waits on one interrupted_side_effect approval that says the call may
// already have taken effect. Approving it is all the policy needs: Attach
// opens the step, found by its call id, and the body runs exactly once
// more.
func TestCrash_SIGKILLDuringExecuteFuncWaitsForOneApproval(t *testing.T) {
	if inCrashChild(t, gkChildDB, gkCrashChild) {
		return
	}
	ctx := context.Background()
	dbPath, linesPath := crashFiles(t)
	st := openAt(t, dbPath)
	defer st.Close()
	g := gkGate(t, st, "parent", 0)
	_, step := kit.BeginStep(t, g, "gate-crash", "post a line", agentrt.FrameworkLimits())
	v, err := step.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "post", Args: json.RawMessage(`{"text":"line"}`), CallID: "call-1"})
	if err != nil || v.Outcome != agentrt.VerdictPending {
		t.Fatalf("Propose: %s, %v", v.Outcome, err)
	}
	op := agentrt.Operator{Store: st}
	if err := op.ApproveShown(ctx, "gate-crash", v.Approval.ID, v.Approval.Hash, "op", "post it"); err != nil {
		t.Fatal(err)
	}

	killChildAt(t, "TestCrash_SIGKILLDuringExecuteFuncWaitsForOneApproval", "effect", gkChildDB+"="+dbPath, gkChildFile+"="+linesPath)

	lines := func() []string { return fileLines(t, linesPath) }
	killed := kit.MustRun(t, st, "gate-crash")
	if killed.Status != agentrt.RunRunning || !strings.HasPrefix(killed.LeaseOwner, "child/") || len(lines()) != 1 {
		t.Fatalf("after SIGKILL: run %s leased %q, lines %q", killed.Status, killed.LeaseOwner, lines())
	}
	var ia *agentrt.Approval
	deadline := time.Now().Add(childWait)
	for ia == nil {
		_, av, err := g.Attach(ctx, "gate-crash")
		var le *agentrt.RunLeasedError
		switch {
		case errors.As(err, &le) && le.ExpiresAt.Equal(killed.LeaseExpiresAt) && time.Now().Before(deadline):
			time.Sleep(min(time.Until(le.ExpiresAt)+time.Millisecond, 50*time.Millisecond))
		case err != nil || av.Outcome != agentrt.VerdictPending || av.Approval == nil:
			t.Fatalf("Attach after the crash: %s, %v; want the step waiting for an operator", av.Outcome, err)
		default:
			ia = av.Approval
		}
	}
	if ia.Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(ia.Presentation), "may already have taken effect") {
		t.Fatalf("the interruption's approval %s: %s", ia.Kind, ia.Presentation)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("the takeover called the body again: %q", got)
	}
	if err := op.ApproveShown(ctx, "gate-crash", ia.ID, ia.Hash, "op", "the line may be missing"); err != nil {
		t.Fatal(err)
	}
	s2, v2, err := g.Attach(ctx, "gate-crash")
	if err != nil || v2.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Attach after one approval: %s, %v; want the step open", v2.Outcome, err)
	}
	open, ok := s2.StepByCallID("call-1")
	if !ok || open.ID() != step.ID() {
		t.Fatalf("StepByCallID: %v, %v", open, ok)
	}
	if _, err := open.ExecuteFunc(ctx, gkBody(linesPath, nil)); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 2 {
		t.Fatalf("the file holds %q, want the child's line and one approved re-run", got)
	}
	if apps := kit.MustApprovals(t, st, "gate-crash"); len(apps) != 2 {
		t.Fatalf("%d approvals, want the policy's and the interruption's", len(apps))
	}
	if err := s2.Complete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
