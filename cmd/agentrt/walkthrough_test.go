package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/console/consoletest"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
)

// walkthrough returns the shell block docs/postgres.md marks as the
// walkthrough, as it is written there.
func walkthrough(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "postgres.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- walkthrough:")
	if !ok {
		t.Fatal("docs/postgres.md has no walkthrough marker")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the walkthrough marker is not followed by a sh block")
	}
	return block
}

// docs/postgres.md's walkthrough, run exactly as written with bash, from
// the repository's root, with the real binaries it builds on the real
// cluster (a fresh schema of scripts/pg-test.sh's): two workers, three
// runs enqueued, the pending approval shown and approved with agentrt on
// the DSN, the console serving the DSN with an invitation for alice, the
// export, the chain verified. Each command's output is checked. Then, as
// the doc's prose says a person does, headless Chromium with a virtual
// authenticator enrolls alice's passkey from the printed URL in the
// console the block left running, and the console shows the runs: the
// approved one completed with alice's decision, the other two waiting;
// approving the second with the passkey has a worker send it once, and
// its page turns completed with a signed approval.
func TestDocs_PostgresWalkthrough(t *testing.T) {
	block := walkthrough(t)
	dsn := freshDSN(t)
	tmp := t.TempDir()
	port := freePort(t)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "DSN="+dsn, "TMPDIR="+tmp, fmt.Sprintf("PORT=%d", port))
	// The block's own process group, so that the workers and the console
	// it leaves running (or a failure leaves behind) are stopped with it,
	// before the schema is dropped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(t, cmd.Process.Pid) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the walkthrough failed: %v\n%s", err, out.String())
		}
	case <-time.After(6 * time.Minute):
		stopGroup(t, cmd.Process.Pid)
		<-done
		t.Fatalf("the walkthrough did not finish in 6 minutes:\n%s", out.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "tmp.*"))
	if len(dirs) != 1 {
		t.Fatalf("want the walkthrough's one work directory under TMPDIR, got %v", dirs)
	}
	work := dirs[0]
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ids := strings.Fields(read("runs.txt"))
	if len(ids) != 3 {
		t.Fatalf("worker -enqueue 3 printed %q", ids)
	}
	run := ids[0]
	origin := fmt.Sprintf("http://localhost:%d", port)
	invite := strings.TrimSpace(read("invite.txt"))
	text := out.String()
	for _, want := range []string{
		// agentrt runs lists every run enqueued.
		ids[0], ids[1], ids[2],
		// agentrt show: the pending approval of the send.
		"APPROVAL WAITING", "send (remote_mutation)", "status        pending",
		// agentrt approve says what it granted.
		"approved",
		// agentrt verify.
		"intact",
		// the last line names the invitation.
		"open " + invite + " ;",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the walkthrough's output lacks %q:\n%s", want, text)
		}
	}
	sent := func(id string) int {
		n := 0
		for _, log := range []string{"w1.log", "w2.log"} {
			n += strings.Count(read(log), "sent for run "+id)
		}
		return n
	}
	if n := sent(run); n != 1 {
		t.Errorf("the approved run's message was sent %d times, want once:\nw1: %s\nw2: %s", n, read("w1.log"), read("w2.log"))
	}
	if !strings.Contains(read("console.log"), "serving postgres://") {
		t.Errorf("console.log = %s", read("console.log"))
	}
	if spans := read("spans.json"); !strings.Contains(spans, run) || !strings.Contains(spans, "execute_tool send") {
		t.Errorf("spans.json lacks the approved run's spans:\n%.3000s", spans)
	}
	if got := strings.TrimSpace(read("otel.cursor")); got != fmt.Sprint(queryInt(t, dsn, "SELECT max(seq) FROM events")) {
		t.Errorf("otel.cursor = %s, not the head", got)
	}
	if !strings.HasPrefix(invite, origin+"/enroll#") {
		t.Fatalf("agentrt approvers invite printed %q, want a URL under %s", invite, origin)
	}

	// The browser steps the doc describes, on the console the block left
	// running. A failure says what the workers, the console and the
	// database say, so that it can be told from a page that did not follow.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("w1.log:\n%s\nw2.log:\n%s\nconsole.log:\n%s\nruns:\n%s", read("w1.log"), read("w2.log"), read("console.log"), queryText(t, dsn,
				`SELECT string_agg(id || ' ' || status || ' ' || coalesce(lease_owner, '-'), E'\n' ORDER BY id) FROM runs`))
		}
	})
	b := consoletest.NewBrowser(t)
	b.Enroll(t, invite)
	b.WaitFor(t, "the inbox listing the two waiting runs", inboxRows(ids[1], ids[2]))
	if n := consoletest.Eval[int](t, b, `document.querySelectorAll("#inbox .approval-row").length`); n != 2 {
		t.Errorf("the inbox lists %d approvals, want the two waiting runs'", n)
	}
	b.Do(t, "the runs page", chromedp.Navigate(origin+"/runs"))
	b.WaitFor(t, "the runs page", `document.querySelector("#runs") !== null`)
	statuses := consoletest.Eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("#runs tbody tr")].map(r =>
		[r.querySelector("a").getAttribute("href"), r.querySelector("td[class^='status-']").textContent.trim()]))`)
	for id, want := range map[string]string{ids[0]: "COMPLETED", ids[1]: "WAITING_FOR_APPROVAL", ids[2]: "WAITING_FOR_APPROVAL"} {
		if got := statuses["/runs/"+id]; !strings.HasPrefix(got, want) {
			t.Errorf("the runs page shows run %s as %q, want %s (all: %v)", id, got, want, statuses)
		}
	}
	b.Do(t, "the approved run's page", chromedp.Navigate(origin+"/runs/"+run))
	b.WaitFor(t, "the approved run's page", `document.getElementById("run-status") !== null`)
	if got := consoletest.Eval[string](t, b, `document.getElementById("run-status").textContent`); !strings.HasPrefix(got, "COMPLETED") {
		t.Errorf("the approved run's page shows status %q, want COMPLETED", got)
	}
	if got := approvalRows(t, b); len(got) != 1 || got[0] != "approved|alice|no" {
		t.Errorf("the approved run's page shows approvals %q, want one approved by alice, unsigned", got)
	}
	if n := consoletest.Eval[int](t, b, `[...document.querySelectorAll("#timeline li.step .tool")].filter(el => el.textContent === "send").length`); n != 1 {
		t.Errorf("the approved run's page shows %d send steps, want 1", n)
	}

	// Approve the second run with the passkey: a worker sends it once, and
	// its page, following the log, turns completed.
	second := ids[1]
	b.Do(t, "the inbox", chromedp.Navigate(origin+"/"))
	b.WaitFor(t, "the second run in the inbox", inboxRows(second))
	b.WaitLive(t)
	b.Click(t, "open the second run's approval", `#inbox a.open[href^="/runs/`+second+`/"]`)
	b.WaitFor(t, "the approval page", `document.querySelector("#approve") !== null`)
	b.Do(t, "approve with the passkey", chromedp.SendKeys("#note", "this one too"), chromedp.Click("#approve"))
	b.WaitFor(t, "the signed approval", `document.getElementById("result").className === "ok"`)
	b.Do(t, "the second run's page", chromedp.Navigate(origin+"/runs/"+second))
	b.WaitFor(t, "the second run completed", `document.getElementById("run-status").textContent.startsWith("COMPLETED")`)
	if got := approvalRows(t, b); len(got) != 1 || got[0] != "approved|alice|yes" {
		t.Errorf("the second run's page shows approvals %q, want one approved by alice, signed", got)
	}
	if n := sent(second); n != 1 {
		t.Errorf("the second run's message was sent %d times, want once:\nw1: %s\nw2: %s", n, read("w1.log"), read("w2.log"))
	}
	if n := sent(ids[2]); n != 0 {
		t.Errorf("the undecided run's message was sent %d times", n)
	}
	b.NoViolations(t)
}

// inboxRows is a page condition: the inbox lists an approval of each run.
func inboxRows(runs ...string) string {
	var c []string
	for _, id := range runs {
		c = append(c, `document.querySelector('#inbox a.open[href^="/runs/`+id+`/"]') !== null`)
	}
	return strings.Join(c, " && ")
}

// approvalRows reads a run page's approvals table: status|decided by|signed.
func approvalRows(t *testing.T, b *consoletest.Browser) []string {
	t.Helper()
	return consoletest.Eval[[]string](t, b, `[...document.querySelectorAll("#approvals tbody tr")].map(r =>
		[...r.cells].slice(1).map(c => c.textContent.trim()).join("|"))`)
}

// stopGroup ends the walkthrough's process group (bash and what it left
// running) with SIGTERM, then SIGKILL if it is still there after 20s.
func stopGroup(t *testing.T, pgid int) {
	t.Helper()
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // already gone
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
	}
	t.Logf("the walkthrough's processes outlived SIGTERM by 20s; killing them")
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// queryText is one text value of a query on dsn, or the error.
func queryText(t *testing.T, dsn, sql string) string {
	t.Helper()
	var s string
	if err := onConn(dsn, func(ctx context.Context, c *pgx.Conn) error { return c.QueryRow(ctx, sql).Scan(&s) }); err != nil {
		return err.Error()
	}
	return s
}
