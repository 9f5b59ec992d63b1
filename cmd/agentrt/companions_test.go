package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func wrongPasswordDSN(t *testing.T) string {
	base := pgDSN(t)
	exec1(t, base, `DO $$ BEGIN CREATE ROLE agentrt_pw LOGIN PASSWORD 'right-password';
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`)
	u, _ := url.Parse(base)
	return "postgres://agentrt_pw:wrong-Pa55@" + u.Host + "/postgres?sslmode=disable"
}

// refusedTheWrongPassword checks that what, given wrongPasswordDSN, said
// the refused login in one sentence without the password, exit 1.
func refusedTheWrongPassword(t *testing.T, what string, r result) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.stderr, "the server refused to log in") || strings.Contains(r.stderr, "wrong-Pa55") {
		t.Fatalf("%s with a wrong password = %d\n%s", what, r.code, r.stderr)
	}
	oneSentence(t, what, r.stderr)
}

// agentrt-console serves a Postgres DSN (its login page answers, and it
// names the database without its password), and refuses a wrong password
// in one line, exit 1.
func TestConsole_OpensAPostgresDSN(t *testing.T) {
	bin := build(t, "agentrt-console", "console/cmd/agentrt-console")
	dsn := freshDSN(t)
	waitingRuns(t, dsn, 1)
	port := freePort(t)
	cmd := exec.Command(bin, "-db", dsn, "-addr", fmt.Sprintf("127.0.0.1:%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, "serving postgres://") {
		t.Fatalf("agentrt-console said %q", line)
	}
	var resp *http.Response
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/login", port))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /login = %v, %v", resp, err)
	}
	resp.Body.Close()

	r := runBin(t, bin, nil, "-db", wrongPasswordDSN(t), "-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	refusedTheWrongPassword(t, "agentrt-console", r)
}

// agentrt-otel exports a Postgres database's runs (to stdout here, with
// the console exporter) and keeps its cursor at the chain's head; a wrong
// password is one line, exit 1.
func TestOtel_ExportsFromAPostgresDSN(t *testing.T) {
	bin := build(t, "agentrt-otel", "export/otel/cmd/agentrt-otel")
	dsn := freshDSN(t)
	id := finishedRun(t, dsn)
	cursor := filepath.Join(t.TempDir(), "cursor")
	r := runBin(t, bin, []string{"OTEL_TRACES_EXPORTER=console"}, "-db", dsn, "-once", "-cursor", cursor)
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "execute_tool read") {
		t.Fatalf("agentrt-otel = %d\n%.2000s\n%s", r.code, r.stdout, r.stderr)
	}
	head := queryInt(t, dsn, "SELECT max(seq) FROM events")
	if got, _ := os.ReadFile(cursor); strings.TrimSpace(string(got)) != fmt.Sprint(head) {
		t.Fatalf("cursor = %q, head %d", got, head)
	}
	r = runBin(t, bin, []string{"OTEL_TRACES_EXPORTER=console"}, "-db", wrongPasswordDSN(t), "-once")
	refusedTheWrongPassword(t, "agentrt-otel", r)
}

// agentrt-policy recheck reads a run from a Postgres DSN; a wrong password
// is one line, exit 1.
func TestPolicyRecheck_OpensAPostgresDSN(t *testing.T) {
	bin := build(t, "agentrt-policy", "cmd/agentrt-policy")
	dsn := freshDSN(t)
	ids := waitingRuns(t, dsn, 1)
	policy := filepath.Join(repo, "examples", "policy", "policy.yaml")
	r := runBin(t, bin, nil, "recheck", "-db", dsn, "-policy", policy, ids[0])
	if r.code > 1 || !strings.Contains(r.stdout, "run "+ids[0]) || !strings.Contains(r.stdout, "step 0 send") {
		t.Fatalf("recheck = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBin(t, bin, nil, "recheck", "-db", wrongPasswordDSN(t), "-policy", policy, ids[0])
	refusedTheWrongPassword(t, "agentrt-policy recheck", r)
}
