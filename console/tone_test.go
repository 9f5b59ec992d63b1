package console

import (
	"testing"

	"github.com/agentrt/agentrt"
)

// Every badge takes the tone its status, kind or outcome names, and one
// the tables do not name takes its fallback: a step still deciding waits,
// an abort fails, a rejected approval is a denial, a running run waits.
func TestTones_EachBadgeTakesItsToneAndUnnamedOnesTheirFallback(t *testing.T) {
	for _, c := range []struct {
		name, got, want string
	}{
		{"step done", stepTone(agentrt.StepDone), toneOK},
		{"step interrupted", stepTone(agentrt.StepInterrupted), toneFail},
		{"step deciding", stepTone(agentrt.StepDeciding), toneWait},
		{"decision complete", decisionTone(agentrt.KindComplete), toneOK},
		{"decision refused", decisionTone(agentrt.KindRefused), toneFail},
		{"verdict approval", verdictTone(agentrt.RequireApproval), toneWait},
		{"verdict deny", verdictTone(agentrt.Deny), toneDeny},
		{"verdict abort", verdictTone(agentrt.Abort), toneFail},
		{"outcome denied", outcomeTone(agentrt.ObsPolicyDenied), toneDeny},
		{"outcome interrupted", outcomeTone(agentrt.ObsInterrupted), toneWait},
		{"outcome tool error", outcomeTone(agentrt.ObsToolError), toneFail},
		{"approval pending", approvalTone(agentrt.ApprovalPending), toneWait},
		{"approval rejected", approvalTone(agentrt.ApprovalRejected), toneDeny},
		{"run cancelled", runTone(agentrt.RunCancelled), toneDeny},
		{"run running", runTone(agentrt.RunRunning), toneWait},
	} {
		if c.got != c.want {
			t.Errorf("%s: tone %q, want %q", c.name, c.got, c.want)
		}
	}
}
