package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// With a Disclosure wired in (as cmd/agentrt wires the default rules), the
// demo's provider requests are judged by it before they leave: here a
// Disclosure that takes "summary.md" for a secret in provider requests
// only, so every request the model demo sends goes redacted, and each
// model.dispatched manifest says where and of which kind.
func TestDemo_ProviderRequestsAreJudgedByTheDisclosure(t *testing.T) {
	const word = "summary.md"
	d := agentrt.DisclosureFunc(func(_ context.Context, in agentrt.DisclosureInput) (agentrt.DisclosureOutcome, error) {
		out := agentrt.DisclosureOutcome{Content: in.Content, Summary: in.Summary, FailureMessage: in.FailureMessage, Blocks: in.Blocks}
		if in.Tool.Name != agentrt.EgressDisclosureTool || !strings.Contains(string(in.Content), word) {
			return out, nil
		}
		out.Content = json.RawMessage(strings.ReplaceAll(string(in.Content), word, agentrt.DisclosureMarker("demo_word")))
		out.Findings = []agentrt.DisclosureFinding{{Rule: "demo_word", Pointer: "/messages/0/content/0/text", Action: agentrt.DisclosureRedacted, Value: word}}
		return out, nil
	})
	parent := t.TempDir()
	r := (*fixture)(nil).runWith(t, func(e *env) { demoEnv(parent)(e); e.opts.Disclosure = d }, nil, "demo", "-agent", agentModel, "-auto-approve")
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	st, run := demoRun(t, demoDir(t, parent))
	evs, err := st.ListEvents(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type != agentrt.EventModelDispatched {
			continue
		}
		p, err := agentrt.PayloadAs[agentrt.ModelDispatchedPayload](ev)
		if err != nil || p.Egress == nil || !p.Egress.Redacted || len(p.Egress.Secrets) != 1 || p.Egress.Secrets[0].Kind != "demo_word" {
			t.Fatalf("manifest %s: %v", ev.Payload, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the demo dispatched no model call")
	}
}
