package proxy

import (
	"context"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// Today's policy is asked about recorded calls: the same configuration
// decides the same (a re-run of an unknown outcome included, recognised
// from its interruption approval), and a class changed to deny names the
// calls it now denies.
func TestRecheck_ChangedPolicyNamesTheCallsNowDenied(t *testing.T) {
	h := newHarness(t, allowWrites)
	h.expect("", "up_write", `{"path":"a"}`)
	h.expect("", "up_read", `{"path":"a"}`)
	h.up.hang.Store(true)
	h.expect(StatusUnknownOutcome, "up_write", `{"path":"b"}`)
	h.up.hang.Store(false)
	h.decide(h.onlyPending(agentrt.InterruptedSideEffect), true, "")
	h.expect("", "up_write", `{"path":"b"}`)
	h.stop()

	sum, err := Recheck(context.Background(), h.cfg, RecheckOptions{})
	mustf(t, err == nil && len(sum.Reports) == 4 && sum.Differ == 0 && sum.Checked == 3 && sum.Skipped == 0, "same config: %+v %v", sum, err)

	rules(h.cfgDoc, "write")["outcome"] = "deny"
	h.writeConfig()
	sum, err = Recheck(context.Background(), h.cfg, RecheckOptions{})
	mustf(t, err == nil && sum.Differ == 2, "deny: %+v %v", sum, err)
	for _, rep := range sum.Reports {
		for _, ev := range rep.Differences() {
			mustf(t, ev.Tool == "up_write" && ev.Recorded == agentrt.Allow && ev.Now == agentrt.Deny, "difference %+v", ev)
		}
	}
}
