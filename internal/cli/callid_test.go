package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// A framework's id for a call, proposed through a Gate, is shown by show
// (beside the tool) and by events (in step.decided), escaped like any text
// a caller chose.
func TestShow_CallIDIsShownEscaped(t *testing.T) {
	f, st := newBareFixture(t)
	_, s, step := kit.BeginGate(t, agentrt.EngineConfig{Store: st, Tools: fixtureTools,
		Policy: agentrt.DefaultPolicy(), Now: f.clock.Now, NewID: f.ids.ID}, "run-1", "goal", agentrt.FrameworkLimits())
	ctx := context.Background()
	v, err := step.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "read", Args: json.RawMessage(`{"path":"a"}`), CallID: "toolu_7" + rlo})
	if err != nil || v.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("Propose: %s, %v", v.Outcome, err)
	}
	if _, err := step.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	st.Close()
	for _, cmd := range []string{"show", "events"} {
		r := f.run(t, nil, "-db", f.path, cmd, "run-1")
		if r.code != ExitOK || !strings.Contains(r.stdout, "toolu_7") {
			t.Fatalf("%s: exit %d, the call id is not shown:\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, rlo) {
			t.Fatalf("%s printed the call id's control character raw", cmd)
		}
	}
	if r := f.run(t, nil, "-db", f.path, "show", "run-1"); !strings.Contains(r.stdout, "read [toolu_7") {
		t.Fatalf("show does not put the call id beside its tool:\n%s", r.stdout)
	}
}
