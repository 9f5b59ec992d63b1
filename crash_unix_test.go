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

// The child process of the SIGKILL test is this test binary run again with
// these variables set.
const (
	lkChildDB   = "AGENTRT_TEST_CRASH_DB"
	lkChildFile = "AGENTRT_TEST_CRASH_FILE"
	lkChildTTL  = 500 * time.Millisecond
)

// lkAppendTool appends a line to path and syncs it; after the effect it
// calls then.
func lkAppendTool(path string, then func()) agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "append", Description: "append a line to a file", SideEffect: agentrt.LocalMutation,
			Timeout: time.Minute, InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		Fn: func(_ context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(call.Args, &a); err != nil {
				return agentrt.ToolResult{}, err
			}
			if err := appendSynced(path, a.Text); err != nil {
				return agentrt.ToolResult{}, err
			}
			if then != nil {
				then()
			}
			return agentrt.ToolResult{Content: json.RawMessage(`{"appended":true}`)}, nil
		},
	}
}

func lkAppendScript() agentrt.AgentFunc {
	return func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			return kit.Call("append", `{"text":"line"}`), nil
		}
		return kit.Complete(`{"done":true}`), nil
	}
}

// lkCrashChild is the child: it runs the driver until the tool has taken
// effect, says so on stdout, and blocks until it is killed.
func lkCrashChild(t *testing.T) {
	st := openAt(t, os.Getenv(lkChildDB))
	tool := lkAppendTool(os.Getenv(lkChildFile), effectThenHang)
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:      st,
			Policy:     agentrt.DefaultPolicy(),
			Tools:      []agentrt.Tool{tool},
			LeaseTTL:   lkChildTTL,
			LeaseOwner: "child",
		},
		Agent: lkAppendScript(),
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.StartWithID(context.Background(), "crash-run", "append a line", agentrt.DefaultLimits())
	t.Fatalf("the child's run returned %s, %v; it should have been killed", run.Status, err)
}

// A driver runs in a child process; its tool appends a line to a file and
// the process is killed with SIGKILL after the effect and before the
// outcome is recorded. Resumed in the parent once the child's lease lapses,
// the run waits on an interrupted_side_effect approval with the file holding
// one line; approved, the call runs exactly once more.
func TestCrash_SIGKILLAfterTheEffectWaitsForAnOperator(t *testing.T) {
	if inCrashChild(t, lkChildDB, lkCrashChild) {
		return
	}
	ctx := context.Background()
	dbPath, linesPath := crashFiles(t)

	killChildAt(t, "TestCrash_SIGKILLAfterTheEffectWaitsForAnOperator", "effect", lkChildDB+"="+dbPath, lkChildFile+"="+linesPath)

	st := openAt(t, dbPath)
	defer st.Close()
	killed := kit.MustRun(t, st, "crash-run")
	steps := kit.MustSteps(t, st, "crash-run")
	if killed.Status != agentrt.RunRunning || !strings.HasPrefix(killed.LeaseOwner, "child/") || len(steps) != 1 || steps[0].Status != agentrt.StepExecuting {
		t.Fatalf("after SIGKILL: run %s leased %q, %d steps", killed.Status, killed.LeaseOwner, len(steps))
	}
	lines := func() []string { return fileLines(t, linesPath) }
	if got := lines(); len(got) != 1 {
		t.Fatalf("the file holds %q, want the one line the child wrote", got)
	}

	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{lkAppendTool(linesPath, nil)}, LeaseOwner: "parent"}, Agent: lkAppendScript()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := resumePastDeadLease(t, d, "crash-run", killed.LeaseExpiresAt)
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("resume after the crash: %s, %v; want waiting", run.Status, err)
	}
	a := kit.PendingApproval(t, st, "crash-run")
	if a.Kind != agentrt.InterruptedSideEffect || a.StepID != steps[0].ID || !strings.Contains(string(a.Presentation), "outcome is unknown") {
		t.Fatalf("approval %s for step %s: %s", a.Kind, a.StepID, a.Presentation)
	}
	if got := lines(); len(got) != 1 {
		t.Fatalf("the resume ran the call again: the file holds %q", got)
	}
	tk := kit.EventsOf(t, st, "crash-run", agentrt.EventLeaseTakenOver)
	if len(tk) != 1 || kit.Payload(t, tk[0])["previous_owner"] != killed.LeaseOwner {
		t.Fatalf("takeover events %v", tk)
	}

	if err := (agentrt.Operator{Store: st}).ApproveShown(ctx, "crash-run", a.ID, a.Hash, "op", "the line may be missing"); err != nil {
		t.Fatal(err)
	}
	run, err = d.Resume(ctx, "crash-run")
	if err != nil || run.Status != agentrt.RunCompleted {
		t.Fatalf("resume after approval: %s, %v", run.Status, err)
	}
	if got := lines(); len(got) != 2 || got[0] != "line" || got[1] != "line" {
		t.Fatalf("the file holds %q, want the child's line and one approved re-run", got)
	}
	if s := kit.MustSteps(t, st, "crash-run"); len(s) != 2 || s[0].Status != agentrt.StepDone {
		t.Fatalf("steps after the re-run: %d, first %s", len(s), s[0].Status)
	}
	if _, err := d.Resume(ctx, "crash-run"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("resume of the completed run: %v", err)
	}
	if got := lines(); len(got) != 2 {
		t.Fatalf("the file holds %d lines after a refused resume", len(got))
	}
}
