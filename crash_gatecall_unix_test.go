//go:build unix

package agentrt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/sqlite"
)

// The Gate.Call child of the two-commit crash test is this test binary run
// again with these variables set.
const (
	gcChildDB   = "AGENTRT_TEST_GATECALL_CRASH_DB"
	gcChildFile = "AGENTRT_TEST_GATECALL_CRASH_FILE"
)

// gcGate is a gate whose policy allows the remote write at once.
func gcGate(t *testing.T, st agentrt.Store, owner string, ttl time.Duration) *agentrt.Gate {
	t.Helper()
	g, err := agentrt.NewGate(agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{Store: st,
		Policy: agentrt.SideEffectPolicy{agentrt.RemoteMutation: agentrt.Allow},
		Tools:  []agentrt.Tool{agentrt.SpecOnly(gkSpec)}, LeaseTTL: ttl, LeaseOwner: owner}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gcCrashChild is the child: its call begins the run, is allowed, and its
// body writes the line, says so and blocks until the process is killed:
// after the call's first commit, before its second.
func gcCrashChild(t *testing.T) {
	st, err := sqlite.Open(os.Getenv(gcChildDB))
	if err != nil {
		t.Fatal(err)
	}
	g := gcGate(t, st, "child", lkChildTTL)
	_, err = g.Call(context.Background(), agentrt.Call{RunID: "call-crash", CallID: "call-1", Tool: "post",
		Args: json.RawMessage(`{"text":"line"}`), Body: gkBody(os.Getenv(gcChildFile), effectThenHang)})
	t.Fatalf("the child's Call returned %v; it should have been killed", err)
}

// An allowed Gate.Call commits its run, step, decision, policy decision and
// tool start in one transaction, then its outcome in a second. A child
// process is killed with SIGKILL while the body runs, between the two: the
// record holds the whole start (through step.tool_started) and no outcome.
// The same call made again in the parent, once the child's lease lapsed,
// never runs the body by itself: it waits on the one interrupted_side_effect
// approval, and approved, runs the body exactly once more.
func TestCrash_SIGKILLBetweenACallsTwoCommitsIsNotRunAgain(t *testing.T) {
	if os.Getenv(gcChildDB) != "" {
		gcCrashChild(t)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	ctx := context.Background()
	dbPath, linesPath := crashFiles(t)
	st, err := sqlite.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	killChildAt(t, "TestCrash_SIGKILLBetweenACallsTwoCommitsIsNotRunAgain", "effect", gcChildDB+"="+dbPath, gcChildFile+"="+linesPath)

	lines := func() []string { return fileLines(t, linesPath) }
	kit.RequireEvents(t, st, "call-crash", []kit.E{agentrt.EventRunCreated, agentrt.EventRunStarted, agentrt.EventStepStarted,
		agentrt.EventStepDecided, agentrt.EventStepPolicy, agentrt.EventToolStarted})
	if steps := kit.MustSteps(t, st, "call-crash"); len(steps) != 1 || steps[0].Status != agentrt.StepExecuting || len(lines()) != 1 {
		t.Fatalf("after SIGKILL: steps %+v, lines %q", steps, lines())
	}

	g := gcGate(t, st, "parent", 0)
	defer g.Close()
	done := make(chan error, 1)
	go func() {
		res, err := g.Call(ctx, agentrt.Call{RunID: "call-crash", CallID: "call-1", Tool: "post",
			Args: json.RawMessage(`{"text":"line"}`), Body: gkBody(linesPath, nil)})
		if err == nil && res.Observation.Kind != agentrt.ObsToolResult {
			err = fmt.Errorf("the call came to %s", res.Observation.Kind)
		}
		done <- err
	}()
	var ia agentrt.Approval
	for deadline := time.Now().Add(childWait); ia.ID == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no approval was asked about the cut-off call")
		}
		if apps := kit.MustApprovals(t, st, "call-crash"); len(apps) > 0 {
			ia = apps[0]
		}
	}
	if ia.Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(ia.Presentation), "may already have taken effect") {
		t.Fatalf("the interruption's approval %s: %s", ia.Kind, ia.Presentation)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("the call made again ran the body before an operator decided: %q", got)
	}
	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "call-crash", ia.ID, ia.Hash, "op", "the line may be missing"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(childWait):
		t.Fatal("the call did not return after the approval")
	}
	if got := lines(); len(got) != 2 {
		t.Fatalf("the file holds %q, want the child's line and one approved re-run", got)
	}
	if apps := kit.MustApprovals(t, st, "call-crash"); len(apps) != 1 {
		t.Fatalf("%d approvals, want the interruption's only", len(apps))
	}
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
