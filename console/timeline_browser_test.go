package console_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/console/consoletest"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/chromedp/chromedp"
)

// demoDB runs `agentrt demo -auto-approve`, as make demo does, with the
// real binary, and opens the database it leaves: one run that listed and
// read a workspace, wrote a file an operator approved, and finished, with
// its model calls settled against the demo's budget.
func demoDB(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	bin := agentrtBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.db")
	cmd := exec.Command(bin, "-db", path, "demo", "-auto-approve")
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agentrt demo -auto-approve: %v\n%s", err, out)
	}
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// The run page of make demo's run draws the run as a timeline: one card
// per step, each with the model's decision, the policy's verdict, the
// approval (who, when, signed or not) and the tool's outcome, as badges.
// The chain's JSON of each step is on the page but not shown until its
// details is opened, so the page is a screen or two tall, not a wall of
// payloads. The budgets page shows the demo's budget as money with a
// usage bar. No page reports a CSP violation.
func TestBrowser_RunPageDrawsTheRunAsATimelineOfSteps(t *testing.T) {
	st, path := demoDB(t)
	e := newConsoleEnvOn(t, st, path)
	runs := mustRuns(t, e)
	if len(runs) != 1 {
		t.Fatalf("the demo left %d runs, want 1", len(runs))
	}
	b := consoletest.NewBrowser(t)
	b.Enroll(t, e.invite("dana"))
	b.Do(t, "the demo run's page", chromedp.Navigate(e.origin+"/runs/"+runs[0]))
	b.WaitFor(t, "the timeline", `document.querySelectorAll("#timeline li.step").length > 0`)
	b.WaitLive(t)

	cards := consoletest.Eval[[]string](t, b, `[...document.querySelectorAll("#timeline li.step")].map(li =>
		[".tool", ".decision .badge", ".verdict .badge", ".approval", ".outcome .badge"].map(s => {
			const el = li.querySelector(s); return el ? el.textContent.replace(/\s+/g, " ").trim() : "MISSING"; }).join("|"))`)
	want := []string{
		"list_files|tool_call|allow|Approval not needed|tool_result",
		"read_file|tool_call|allow|Approval not needed|tool_result",
		"write_file|tool_call|require_approval|Approval approved by demo-operator, * unsigned *|tool_result",
		"finish|tool_call|allow|Approval not needed|tool_result",
	}
	if len(cards) != len(want) {
		t.Fatalf("the timeline has %d steps, want %d: %q", len(cards), len(want), cards)
	}
	for i, w := range want {
		if !matchStars(w, cards[i]) {
			t.Errorf("step %d reads %q, want %q", i, cards[i], w)
		}
	}
	if n := consoletest.Eval[int](t, b, `document.querySelectorAll("#timeline li.step.tone-ok .stage.outcome.tone-ok").length`); n != 4 {
		t.Errorf("%d steps are coloured as done with a result, want 4", n)
	}
	if got := consoletest.Eval[string](t, b, `document.getElementById("run-status").className`); got != "badge tone-ok" {
		t.Errorf("the run's status is drawn with class %q, want a badge coloured ok", got)
	}

	// The JSON is on the page, behind a closed details on each step.
	const rawWrite = `"tool":"write_file"`
	if n := consoletest.Eval[int](t, b, `document.querySelectorAll("#timeline li.step > details.raw:not([open])").length`); n != 4 {
		t.Fatalf("%d steps have a closed details of raw events, want 4", n)
	}
	if !consoletest.Eval[bool](t, b, `document.getElementById("raw-2").textContent.includes(`+jsString(rawWrite)+`)`) {
		t.Fatal("the write step's raw events are not on the page")
	}
	if consoletest.Eval[bool](t, b, `document.body.innerText.includes(`+jsString(rawWrite)+`) || document.body.innerText.includes('"call_id"')`) {
		t.Fatal("raw event JSON is shown before a details is opened")
	}
	height := consoletest.Eval[int](t, b, `document.documentElement.scrollHeight`)
	t.Logf("the demo run's page is %d px tall at 1280x900", height)
	if height >= 1800 {
		t.Errorf("the demo run's page is %d px tall, want under 1800", height)
	}
	screenshot(t, b, "console-run.png")
	b.Click(t, "open the write step's raw events", "#raw-2 > summary")
	b.WaitFor(t, "the raw events shown", `document.body.innerText.includes(`+jsString(rawWrite)+`) && document.body.innerText.includes("approval.decided")`)

	// Budgets as money, with a bar.
	b.Do(t, "the budgets page", chromedp.Navigate(e.origin+"/budgets"))
	b.WaitFor(t, "the budgets page", `document.querySelector("#budgets") !== null`)
	text := consoletest.Eval[string](t, b, `document.getElementById("budgets").innerText`)
	if !strings.Contains(text, "demo-daily") || !strings.Contains(text, "$0.0500") || strings.Contains(text, "micros") {
		t.Errorf("the budgets page does not show the demo's 5-cent ceiling as money:\n%s", text)
	}
	used := consoletest.Eval[[]float64](t, b, `[...document.querySelectorAll("#budgets meter")].map(m => [m.value, m.max]).flat()`)
	if len(used) != 2 || used[0] <= 0 || used[1] != 50_000 {
		t.Errorf("the budget's usage bar reads %v, want one meter of the settled calls against 50000", used)
	}
	screenshot(t, b, "console-budgets.png")
	b.NoViolations(t)
}

// matchStars reports whether s matches pattern, where each * stands for
// any run of characters.
func matchStars(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
