package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// After the write is approved, agentrt resume prints the run as show's
// step table under the command that prints it, as the demo ends, and no
// raw event line or event type.
func TestResume_PrintsTheStepTableNotRawEvents(t *testing.T) {
	parent := t.TempDir()
	r := (*fixture)(nil).runWith(t, demoEnv(parent), nil, "demo", "-agent", agentScripted)
	if r.code != ExitOK {
		t.Fatalf("demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cmds := regexp.MustCompile(`(?m)^  agentrt (.*)$`).FindAllStringSubmatch(r.stdout, -1)
	if len(cmds) != 3 {
		t.Fatalf("printed commands %q", cmds)
	}
	approve, resume := strings.Fields(cmds[0][1]), strings.Fields(cmds[1][1])
	yes := func(e *env) { e.interactive = func(io.Reader) bool { return true } }
	if a := (*fixture)(nil).runWith(t, yes, strings.NewReader("yes\n"), append(approve, "-by", "tester")...); a.code != ExitOK {
		t.Fatalf("approve: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	done := (*fixture)(nil).run(t, nil, resume...)
	if done.code != ExitOK {
		t.Fatalf("resume: exit %d\n%s%s", done.code, done.stdout, done.stderr)
	}
	printsTheStepTable(t, "resume", done.stdout)
	for _, typ := range []agentrt.EventType{agentrt.EventRunResumed, agentrt.EventStepDecided, agentrt.EventToolFinished, agentrt.EventRunFinished} {
		if strings.Contains(done.stdout, string(typ)) {
			t.Errorf("resume prints the event type %s", typ)
		}
	}
	if !strings.Contains(done.stdout, "COMPLETED (goal_completed) after 4 steps") || !strings.Contains(done.stdout, "intact: ") {
		t.Errorf("resume does not say how the run ended and that the chain is intact:\n%s", done.stdout)
	}
}
