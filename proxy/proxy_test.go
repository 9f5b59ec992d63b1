package proxy

import (
	"context"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// An allowed read returns the server's content as the server sent it, and
// runs as a run of its own that completes.
func TestProxy_AllowedReadReturnsContent(t *testing.T) {
	h := newHarness(t, nil)
	got := h.expect("", "up_read", `{"path":"a.txt"}`)
	mustf(t, got == "content of a.txt", "read: %q", got)
	runs, _ := h.p.Store().ListRuns(context.Background())
	mustf(t, len(runs) == 1 && runs[0].Status == agentrt.RunCompleted, "runs: %+v", runs)
	// Reads repeat freely.
	h.expect("", "up_read", `{"path":"a.txt"}`)
}

// A write that needs approval answers PENDING_APPROVAL and writes nothing;
// an operator approves, bound to the hash shown; the host's identical call
// collects it and the write happens once; a repeat is DUPLICATE.
func TestProxy_ApprovalRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	h.expect(StatusPendingApproval, "up_write", `{"path":"a","content":"x"}`)
	mustf(t, h.up.count() == 0, "effects before approval: %v", h.up.effectsNow())
	a := h.onlyPending("local_mutation")
	mustf(t, strings.Contains(h.stderr.String(), "approve "+a.RunID+" -approval "+a.ID), "stderr: %s", h.stderr)
	// Asking again before a decision opens nothing new.
	h.expect(StatusPendingApproval, "up_write", `{"content":"x", "path":"a"}`)
	mustf(t, len(h.pending()) == 1, "a second approval opened: %+v", h.pending())

	h.decide(a, true, "")
	got := h.expect("", "up_write", `{"path":"a","content":"x"}`)
	mustf(t, got == "wrote a" && h.up.count() == 1, "after approval: %q, effects %v", got, h.up.effectsNow())
	h.expect(StatusDuplicate, "up_write", `{"path":"a","content":"x"}`)
	mustf(t, h.up.count() == 1, "a duplicate ran: %v", h.up.effectsNow())
	run, _ := h.p.Store().GetRun(context.Background(), a.RunID)
	mustf(t, run.Status == agentrt.RunCompleted, "run %+v", run)
	// Other arguments are another request.
	h.expect(StatusPendingApproval, "up_write", `{"path":"a","content":"y"}`)
	mustf(t, h.up.count() == 1, "effects %v", h.up.effectsNow())
}
