package disclosure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cmdline"
	"github.com/agentrt/agentrt/disclosure"
	"github.com/agentrt/agentrt/scripted"
)

// agentrt show prints, for the step whose result the default rules
// redacted, one line naming the count, the rules and the pointers, and no
// planted secret.
func TestShow_PrintsWhatDisclosureRedactedPerStep(t *testing.T) {
	st := openDB(t)
	agent := agentrt.AgentFunc(func(_ context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
		if in.Steps.Len() == 0 {
			return scripted.ToolCall("read_env", `{}`, ""), nil
		}
		return agentrt.Decision{Kind: agentrt.KindComplete, Result: json.RawMessage(`{}`)}, nil
	})
	drv, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{leakyTool()}, Disclosure: rules(t, disclosure.Default())}, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.StartWithID(context.Background(), "r", "read the env file", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := cmdline.Run([]string{"-db", st.Path(), "show", "r"}, nil, &out, os.Stderr); code != 0 {
		t.Fatalf("agentrt show exited %d", code)
	}
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "disclosure  step 0 read_env: ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("agentrt show prints no disclosure line:\n%s", out.String())
	}
	for _, want := range []string{" redacted by ", disclosure.RuleAWSAccessKeyID, disclosure.RuleStripeKey, "/fields/aws access key id", "/fields/jwt", "more place(s)"} {
		if !strings.Contains(line, want) {
			t.Errorf("the disclosure line lacks %q: %s", want, line)
		}
	}
	if got := leaks(out.Bytes()); len(got) != 0 {
		t.Errorf("agentrt show holds %v", got)
	}
}
