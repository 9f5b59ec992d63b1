package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// allowWrites lets writes run without approval and times them out fast.
func allowWrites(doc map[string]any) {
	r := rules(doc, "write")
	r["outcome"] = "allow"
	r["timeout"] = "300ms"
}

// A write that took effect and then never answered is an unknown outcome:
// the model is told UNKNOWN_OUTCOME, an operator is asked about running it
// again, every other write through the tool is BLOCKED meanwhile, an
// identical call runs nothing, and only an approval runs it again, once.
func TestUnknown_TimeoutAfterTheEffectWaitsForAnOperator(t *testing.T) {
	h := newHarness(t, allowWrites)
	h.up.hang.Store(true)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	mustf(t, h.up.count() == 1, "effects: %v", h.up.effectsNow())
	a := h.onlyPending(agentrt.InterruptedSideEffect)
	mustf(t, strings.Contains(string(a.Capability), `"ended":"timed_out"`), "capability %s", a.Capability)
	h.up.hang.Store(false)

	h.expect(StatusBlocked, "up_write", `{"path":"b","content":"y"}`)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	mustf(t, h.up.count() == 1 && len(h.pending()) == 1, "effects %v, pending %d", h.up.effectsNow(), len(h.pending()))
	// Reads are not blocked.
	h.expect("", "up_read", `{"path":"a"}`)

	h.decide(a, true, "ran it again on purpose")
	got := h.expect("", "up_write", `{"path":"a","content":"x"}`)
	mustf(t, got == "wrote a" && h.up.count() == 2, "re-run: %q, effects %v", got, h.up.effectsNow())
	h.expect(StatusDuplicate, "up_write", `{"path":"a","content":"x"}`)
	h.expect("", "up_write", `{"path":"b","content":"y"}`)
	mustf(t, h.up.count() == 3, "effects %v", h.up.effectsNow())
}

// Rejecting the re-run of an unknown outcome unblocks the tool; an
// identical call is REJECTED within the repeat window and asked about
// again after it, never run under the ordinary policy.
func TestUnknown_RejectionUnblocksAndAnIdenticalCallAsksAgain(t *testing.T) {
	h := newHarness(t, allowWrites)
	h.up.hang.Store(true)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	h.up.hang.Store(false)
	a := h.onlyPending(agentrt.InterruptedSideEffect)
	h.decide(a, false, "it did take effect")

	h.expect("", "up_write", `{"path":"b","content":"y"}`)
	got := h.expect(StatusRejected, "up_write", `{"path":"a","content":"x"}`)
	mustf(t, strings.Contains(got, "it did take effect"), "rejected: %q", got)
	mustf(t, h.up.count() == 2, "effects %v", h.up.effectsNow())

	h.clock.Advance(DefaultRepeatWindow + time.Second)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	again := h.onlyPending(agentrt.InterruptedSideEffect)
	mustf(t, again.ID != a.ID, "the same approval was asked again")
	h.expect(StatusBlocked, "up_write", `{"path":"c","content":"z"}`)
	mustf(t, h.up.count() == 2, "effects %v", h.up.effectsNow())
}

// An unknown outcome's question that expires resolves nothing: it is asked
// again, so the tool is never blocked with nothing to decide, and nothing
// runs again.
func TestUnknown_ExpiryAsksAgainRatherThanUnblocks(t *testing.T) {
	h := newHarness(t, func(doc map[string]any) {
		allowWrites(doc)
		doc["approval_ttl"] = "1h"
	})
	h.up.hang.Store(true)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	h.up.hang.Store(false)
	first := h.onlyPending(agentrt.InterruptedSideEffect)

	h.clock.Advance(2 * time.Hour)
	h.expect(StatusBlocked, "up_write", `{"path":"b","content":"y"}`)
	second := h.onlyPending(agentrt.InterruptedSideEffect)
	mustf(t, second.ID != first.ID, "not asked again")
	run, _ := h.p.Store().GetRun(context.Background(), first.RunID)
	mustf(t, run.Status == agentrt.RunCancelled && run.Reason == agentrt.ReasonApprovalExpired, "first run %s %s", run.Status, run.Reason)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	mustf(t, len(h.pending()) == 1 && h.up.count() == 1, "pending %d effects %v", len(h.pending()), h.up.effectsNow())

	// Expired again, the identical call asks again too.
	h.clock.Advance(2 * time.Hour)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"a","content":"x"}`)
	third := h.onlyPending(agentrt.InterruptedSideEffect)
	mustf(t, third.ID != second.ID && h.up.count() == 1, "third %s effects %v", third.ID, h.up.effectsNow())
	h.decide(third, true, "")
	h.expect("", "up_write", `{"path":"a","content":"x"}`)
	h.expect("", "up_write", `{"path":"b","content":"y"}`)
	mustf(t, h.up.count() == 3, "effects %v", h.up.effectsNow())
}

// A mutating call whose server answered with content the runtime refused
// ran: it is UNRECORDED, and an identical call is a DUPLICATE, not a
// second run.
func TestUnknown_UnrecordedResultCountsAsExecuted(t *testing.T) {
	h := newHarness(t, allowWrites)
	h.expect(StatusUnrecorded, "up_write", `{"path":"a","content":"x","mode":"refused"}`)
	mustf(t, h.up.count() == 1, "effects %v", h.up.effectsNow())
	h.expect(StatusDuplicate, "up_write", `{"path":"a","content":"x","mode":"refused"}`)
	mustf(t, h.up.count() == 1 && len(h.pending()) == 0, "effects %v pending %d", h.up.effectsNow(), len(h.pending()))
}

// A server that answers with an error ran and said so: FAILED, with its
// message; an identical call is a DUPLICATE.
func TestUnknown_ServerErrorIsAKnownFailure(t *testing.T) {
	h := newHarness(t, allowWrites)
	got := h.expect(StatusFailed, "up_write", `{"path":"a","mode":"error"}`)
	mustf(t, strings.Contains(got, "the disk is full"), "failed: %q", got)
	h.expect(StatusDuplicate, "up_write", `{"path":"a","mode":"error"}`)
	h.expect("", "up_write", `{"path":"b"}`)
	mustf(t, len(h.pending()) == 0, "pending %+v", h.pending())
}
