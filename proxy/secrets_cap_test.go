package proxy

import (
	"strings"
	"testing"
)

// An allowed remote write whose arguments carry a key waits for an
// operator, so it counts against max_pending like any approval: with
// max_pending 1, the second such write is BLOCKED without asking, while a
// clean write still runs at once.
func TestProxy_SecretEscalationCountsAgainstTheCap(t *testing.T) {
	h := newHarness(t, func(doc map[string]any) {
		doc["max_pending"] = 1
		doc["policy"] = map[string]any{"remote_mutation": "allow"}
		rules(doc, "write")["side_effect"] = "remote_mutation"
	})
	defer h.stop()
	h.expect(StatusPendingApproval, "up_write", `{"path":"1","content":"`+plantedKey+`"}`)
	got := h.expect(StatusBlocked, "up_write", `{"path":"2","content":"`+plantedKey+`"}`)
	mustf(t, strings.Contains(got, "1 requests"), "blocked: %q", got)
	h.expect("", "up_write", `{"path":"3","content":"clean"}`)
	mustf(t, len(h.pending()) == 1, "pending %d, want the first write's only", len(h.pending()))
	if got := h.up.effectsNow(); len(got) != 1 || got[0] != "3=clean" {
		t.Fatalf("writes that took effect: %v", got)
	}
}
