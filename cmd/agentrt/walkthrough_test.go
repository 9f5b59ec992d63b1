package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
// the DSN, the console serving the DSN, the export, the chain verified.
// Each command's output is checked.
func TestDocs_PostgresWalkthrough(t *testing.T) {
	block := walkthrough(t)
	dsn := freshDSN(t)
	tmp := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "DSN="+dsn, "TMPDIR="+tmp, fmt.Sprintf("PORT=%d", freePort(t)))
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the walkthrough did not finish in 4 minutes:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
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
	text := string(out)
	for _, want := range []string{
		// agentrt runs lists every run enqueued.
		ids[0], ids[1], ids[2],
		// agentrt show: the pending approval of the send.
		"APPROVAL WAITING", "send (remote_mutation)", "status        pending",
		// agentrt approve says what it granted.
		"approved",
		// the console answered on the DSN.
		"\n200\n",
		// agentrt verify.
		"intact",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the walkthrough's output lacks %q:\n%s", want, text)
		}
	}
	sent := 0
	for _, log := range []string{"w1.log", "w2.log"} {
		sent += strings.Count(read(log), "sent for run "+run)
	}
	if sent != 1 {
		t.Errorf("the approved run's message was sent %d times, want once:\nw1: %s\nw2: %s", sent, read("w1.log"), read("w2.log"))
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
}
