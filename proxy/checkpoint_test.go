package proxy

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/checkpoint"
)

// With checkpoint_sync and an hour's checkpoint_interval, the events of a
// call the proxy answered are all folded by the time the host has the
// answer. Closing the proxy stops its integrator. (Without the setting the
// integrator's one fold at start may still come after the call, so no
// control here can tell the two apart; TestProcess_SyncFoldsEveryEvent-
// BeforeTheStepReturns in package checkpoint holds the control.)
func TestProxy_CheckpointSyncFoldsACallBeforeItIsAnswered(t *testing.T) {
	h := newHarness(t, func(doc map[string]any) {
		doc["checkpoint_interval"] = "1h"
		doc["checkpoint_sync"] = true
	})
	got := h.expect("", "up_read", `{"path":"a.txt"}`)
	mustf(t, got == "content of a.txt", "read: %q", got)
	ctx := context.Background()
	st := h.p.Store()
	runs, err := st.ListRuns(ctx)
	mustf(t, err == nil && len(runs) == 1, "runs: %v %+v", err, runs)
	evs, err := st.ListEvents(ctx, runs[0].ID)
	mustf(t, err == nil && len(evs) > 0, "events: %v", err)
	cs, err := checkpoint.For(st)
	mustf(t, err == nil, "For: %v", err)
	leaves, err := cs.CheckpointLeavesOf(ctx, runs[0].ID, evs[0].Seq, evs[len(evs)-1].Seq)
	mustf(t, err == nil, "leaves: %v", err)
	mustf(t, len(leaves) == len(evs), "sync: %d of %d events folded when the call was answered", len(leaves), len(evs))
	h.stop()
}
