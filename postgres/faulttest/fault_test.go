package faulttest

import (
	"context"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

// faultRuns is how many runs the killed-worker test enqueues: 1,000 in CI,
// AGENTRT_FAULT_RUNS for more (make fault runs 10,000).
func faultRuns() int {
	if n, err := strconv.Atoi(os.Getenv("AGENTRT_FAULT_RUNS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// Four worker processes share the enqueued runs while a supervisor
// SIGKILLs a random one every few hundred milliseconds and restarts it. At
// the end every run completed or waits on an interrupted_side_effect
// approval, no call ran twice, no step was decided twice or skipped, and
// the chain verifies; then an operator approves each interrupted call, the
// workers finish those runs, and the only calls journaled twice are those
// re-runs.
func TestFault_KilledWorkers(t *testing.T) {
	pgtest.DSN(t)
	c := newCluster(t, time.Second)
	st := c.store()
	n := faultRuns()
	c.enqueue(st, n)
	workers := make([]*proc, 4)
	for i := range workers {
		workers[i] = c.start("w"+strconv.Itoa(i), "")
	}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	kills := 0
	next := time.Now().Add(200 * time.Millisecond)
	awaitSettled(t, st, 20*time.Minute, func() {
		time.Sleep(50 * time.Millisecond)
		if time.Now().Before(next) {
			return
		}
		i := rand.IntN(len(workers))
		workers[i].kill()
		kills++
		workers[i] = c.start("w"+strconv.Itoa(i), "")
		next = time.Now().Add(time.Duration(200+rand.IntN(300)) * time.Millisecond)
	})
	t.Logf("%d runs, %d workers killed and restarted", n, kills)
	if kills == 0 {
		t.Fatal("no worker was killed: the test proved nothing")
	}
	check(t, st, c.journal, nil, true)
	approved := approveInterrupted(t, st)
	t.Logf("an operator approved %d interrupted calls", len(approved))
	awaitSettled(t, st, 5*time.Minute, nil)
	check(t, st, c.journal, approved, false)
}

// A worker reaching Postgres through a relay is cut off while it holds
// leases. It starts no tool call or decision once its lease has lapsed by
// its own clock; another worker takes its runs over; when the relay heals,
// the cut-off worker's writes are refused and the journal shows no call
// twice.
func TestFault_PartitionedWorker(t *testing.T) {
	pgtest.DSN(t)
	ttl := 2 * time.Second
	c := newCluster(t, ttl)
	c.toolMS = 100
	st := c.store()
	c.enqueue(st, 40)
	u, err := url.Parse(c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := newRelay(t, u.Host)
	cut := c.start("cut", viaRelay(t, c.dsn, r))
	defer cut.stop()
	// Wait until the cut-off worker holds leases with calls under way and
	// has journaled a call of its own: a step row alone may still be
	// before its tool started, and a cut then leaves nothing to check.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var held int
		st.Pool().QueryRow(context.Background(), "SELECT count(*) FROM runs WHERE lease_owner LIKE 'cut/%' AND status = 'RUNNING' AND step_count > 0").Scan(&held)
		if held >= 4 && journaledBy(c.journal, cut.cmd.Process.Pid) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker behind the relay never held a lease")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.blackhole()
	cutAt := time.Now()
	other := c.start("other", "")
	defer other.stop()
	awaitSettled(t, st, 3*time.Minute, nil)
	r.heal()
	// Let the cut-off worker's held writes reach the server and be
	// refused, then stop it.
	time.Sleep(2 * ttl)
	cut.stop()
	other.stop()
	late := 0
	mine := 0
	for _, e := range readJournal(t, c.journal) {
		if e.pid != cut.cmd.Process.Pid {
			continue
		}
		mine++
		if e.at.After(cutAt.Add(ttl)) {
			late++
			t.Errorf("the cut-off worker journaled %s %s %s at %s, %s after the cut, past its lease", e.kind, e.run, e.step, e.at.Format(time.StampMicro), e.at.Sub(cutAt))
		}
	}
	if mine == 0 {
		t.Fatal("the cut-off worker journaled nothing: the test proved nothing")
	}
	var takenOver int
	st.Pool().QueryRow(context.Background(), "SELECT count(*) FROM events WHERE type = 'lease.taken_over' AND payload_json LIKE '%\"previous_owner\":\"cut/%'").Scan(&takenOver)
	if takenOver == 0 {
		t.Fatal("no run of the cut-off worker was taken over")
	}
	log, _ := os.ReadFile(cut.log)
	t.Logf("cut-off worker: %d journal lines, %d runs taken over from it; its log:\n%s", mine, takenOver, clip(string(log), 2000))
	check(t, st, c.journal, nil, true)
}

// The database stops and starts while workers run: they reconnect, every
// run completes or waits on an interrupted_side_effect approval, and
// nothing runs twice.
func TestFault_DatabaseRestart(t *testing.T) {
	pgtest.DSN(t)
	// The restart gets a cluster of its own: stopping the shared one would
	// cut off every other package's tests that run beside this one.
	bin, data := ownCluster(t)
	c := newCluster(t, time.Second)
	st := c.store()
	n := 300
	c.enqueue(st, n)
	workers := []*proc{c.start("w0", ""), c.start("w1", "")}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		done, _, _ := settled(t, st)
		if done >= n/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the workers made no progress before the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pgctl(t, bin, data, "stop", "-m", "fast")
	time.Sleep(time.Second)
	pgctl(t, bin, data, "-l", filepath.Join(filepath.Dir(data), "server.log"), "start")
	awaitSettled(t, st, 5*time.Minute, nil)
	check(t, st, c.journal, nil, true)
	approved := approveInterrupted(t, st)
	t.Logf("an operator approved %d interrupted calls", len(approved))
	awaitSettled(t, st, 5*time.Minute, nil)
	check(t, st, c.journal, approved, false)
}

// pgctl runs pg_ctl on the cluster, as the postgres user when root (as
// scripts/pg-test.sh started it).
func pgctl(t *testing.T, bin, data string, args ...string) {
	t.Helper()
	argv := append([]string{bin + "/pg_ctl", "-D", data, "-w", "-t", "60"}, args...)
	if os.Getuid() == 0 {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
	}
}

// journaledBy counts the whole journal lines written by pid so far; a line
// still being written is not counted, so it can be read while workers run.
func journaledBy(path string, pid int) int {
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	n := 0
	for _, line := range lines[:len(lines)-1] {
		fs := strings.Fields(line)
		if len(fs) == 5 && fs[3] == strconv.Itoa(pid) {
			n++
		}
	}
	return n
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ownCluster starts a throwaway cluster with scripts/pg-test.sh for this
// test alone, points TEST_PG_DSN at it for the test's duration, and stops
// and removes it afterwards. It returns the cluster's bin and data
// directories, for pg_ctl.
func ownCluster(t *testing.T) (bin, data string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "pg-test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, "start").Output()
	if err != nil {
		t.Fatalf("scripts/pg-test.sh start: %v", err)
	}
	vars := map[string]string{}
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && strings.HasPrefix(line, "export ") {
			vars[k] = strings.Trim(v, "'")
		}
		// "# stop with: …/pg-test.sh stop DIR": DIR is the last word.
		if rest, ok := strings.CutPrefix(line, "# stop with: "); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				dir = f[len(f)-1]
			}
		}
	}
	if dir == "" || vars["TEST_PG_DSN"] == "" || vars["TEST_PG_BIN"] == "" || vars["TEST_PG_DATA"] == "" ||
		filepath.Join(dir, "data") != vars["TEST_PG_DATA"] {
		t.Fatalf("scripts/pg-test.sh start printed no cluster:\n%s", out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("scripts/pg-test.sh stop %s: %v\n%s", dir, err, out)
		}
		// A cluster left running would outlive the test on a shared
		// machine: the directory goes with the server.
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the test's own cluster %s is still there after stop (%v)", dir, err)
		}
	})
	t.Setenv("TEST_PG_DSN", vars["TEST_PG_DSN"])
	return vars["TEST_PG_BIN"], vars["TEST_PG_DATA"]
}
