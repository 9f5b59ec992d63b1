package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
)

func TestMain(m *testing.M) {
	if IsWorker() {
		os.Exit(RunWorker())
	}
	os.Exit(m.Run())
}

// proc is one worker process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// cluster is a test's workers and what they share.
type cluster struct {
	t       testing.TB
	dsn     string
	journal string
	dir     string
	ttl     time.Duration
	toolMS  int
	// chainless makes the workers write events with no chain (the
	// ceiling BenchmarkWorkerProcesses measures the chain against).
	chainless bool
	// checkpoint runs the integrator in each worker.
	checkpoint bool
	mu         sync.Mutex
	n          int
}

func newCluster(t testing.TB, ttl time.Duration) *cluster {
	dir := t.TempDir()
	return &cluster{t: t, dsn: pgtest.Fresh(t), journal: filepath.Join(dir, "journal"), dir: dir, ttl: ttl}
}

// start starts a worker process reaching the database at dsn ("" is the
// cluster's), and waits until it is claiming.
func (c *cluster) start(owner, dsn string) *proc {
	c.t.Helper()
	if dsn == "" {
		dsn = c.dsn
	}
	c.mu.Lock()
	c.n++
	logPath := filepath.Join(c.dir, fmt.Sprintf("%s-%d.log", owner, c.n))
	c.mu.Unlock()
	logf, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=worker", envDSN+"="+dsn, envJournal+"="+c.journal, envOwner+"="+owner,
		envTTL+"="+c.ttl.String(), envToolMS+"="+strconv.Itoa(c.toolMS), envChainless+"="+strconv.FormatBool(c.chainless),
		envCheckpoint+"="+strconv.FormatBool(c.checkpoint))
	cmd.Stderr = logf
	// A worker dies with the test: a test that times out leaves no
	// worker behind to write to the next test's database.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: logPath}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	select {
	case <-ready:
	case <-p.done:
	case <-time.After(60 * time.Second):
		c.t.Fatalf("worker %s did not start", owner)
	}
	return p
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// store opens the cluster's database for the test itself.
func (c *cluster) store() *postgres.Store {
	c.t.Helper()
	st, err := postgres.Open(context.Background(), c.dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { st.Close() })
	return st
}

// enqueue records n runs, many at a time (their commits group).
func (c *cluster) enqueue(st *postgres.Store, n int) { c.enqueueAs(st, "run-", n) }

// enqueueAs is enqueue with the runs' ids prefixed.
func (c *cluster) enqueueAs(st *postgres.Store, prefix string, n int) {
	c.t.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy()}, Agent: agentrt.AgentFunc(nil)})
	if err != nil {
		c.t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := d.EnqueueWithID(context.Background(), fmt.Sprintf("%s%06d", prefix, i), "fault", faultLimits()); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		c.t.Fatal(err)
	}
}

// settled counts runs that need nothing more from a worker: ended (check
// says whether they ended as they should), or waiting on an approval
// nobody decided.
func settled(t *testing.T, st *postgres.Store) (done, waiting, total int) {
	t.Helper()
	ctx := context.Background()
	err := st.Pool().QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE status IN ('COMPLETED', 'FAILED', 'CANCELLED')),
		count(*) FILTER (WHERE status = 'WAITING_FOR_APPROVAL' AND EXISTS
			(SELECT 1 FROM approvals a WHERE a.run_id = runs.id AND a.status = 'pending')),
		count(*) FROM runs`).Scan(&done, &waiting, &total)
	if err != nil {
		t.Logf("settled: %v", err)
	}
	return done, waiting, total
}

// awaitSettled polls until every run is settled, calling tick between
// polls (the supervisor's kills), or fails at the deadline.
func awaitSettled(t *testing.T, st *postgres.Store, deadline time.Duration, tick func()) {
	t.Helper()
	end := time.Now().Add(deadline)
	last := time.Now()
	for {
		done, waiting, total := settled(t, st)
		if total > 0 && done+waiting == total {
			t.Logf("settled: %d ended, %d waiting on an approval", done, waiting)
			return
		}
		if time.Since(last) > 10*time.Second {
			t.Logf("progress: %d ended, %d waiting, of %d", done, waiting, total)
			last = time.Now()
		}
		if time.Now().After(end) {
			t.Fatalf("not settled after %s: %d ended, %d waiting, of %d", deadline, done, waiting, total)
		}
		if tick != nil {
			tick()
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// approveInterrupted approves every pending interrupted_side_effect
// approval, as an operator who checked the journal would, and returns the
// steps whose re-run was approved.
func approveInterrupted(t *testing.T, st *postgres.Store) map[string]bool {
	t.Helper()
	ctx := context.Background()
	rows, err := st.Pool().Query(ctx, `SELECT run_id, id, hash, step_id FROM approvals WHERE status = 'pending' AND kind = $1`, agentrt.InterruptedSideEffect)
	if err != nil {
		t.Fatal(err)
	}
	type app struct{ run, id, hash, step string }
	var apps []app
	for rows.Next() {
		var a app
		if err := rows.Scan(&a.run, &a.id, &a.hash, &a.step); err != nil {
			t.Fatal(err)
		}
		apps = append(apps, a)
	}
	rows.Close()
	approved := map[string]bool{}
	for _, a := range apps {
		if err := agentrt.ApproveShown(ctx, st, nil, a.run, a.id, a.hash, "fault-test", "the journal was checked"); err != nil {
			t.Fatalf("approve %s: %v", a.id, err)
		}
		approved[a.step] = true
	}
	return approved
}

// entry is one journal line.
type entry struct {
	kind, run, step string
	pid             int
	at              time.Time
}

func readJournal(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			t.Fatalf("journal line %q is torn", sc.Text())
		}
		pid, _ := strconv.Atoi(fs[3])
		ns, _ := strconv.ParseInt(fs[4], 10, 64)
		out = append(out, entry{fs[0], fs[1], fs[2], pid, time.Unix(0, ns)})
	}
	return out
}

// check holds the database and the journal to the invariants. approved
// names the steps an operator approved a re-run of; allowWaiting says a
// run may still be waiting on an interrupted_side_effect approval.
func check(t *testing.T, st *postgres.Store, journalPath string, approved map[string]bool, allowWaiting bool) {
	t.Helper()
	ctx := context.Background()
	// Every run completed, or waiting on an interrupted_side_effect approval.
	rows, err := st.Pool().Query(ctx, `SELECT id, status, step_count,
		(SELECT count(*) FROM approvals a WHERE a.run_id = runs.id AND a.status = 'pending' AND a.kind = $1),
		(SELECT count(*) FROM approvals a WHERE a.run_id = runs.id AND a.status = 'pending')
		FROM runs`, agentrt.InterruptedSideEffect)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for rows.Next() {
		var id, status string
		var steps, interrupted, pending int
		if err := rows.Scan(&id, &status, &steps, &interrupted, &pending); err != nil {
			t.Fatal(err)
		}
		ok := status == string(agentrt.RunCompleted) ||
			(allowWaiting && status == string(agentrt.RunWaiting) && interrupted == 1 && pending == 1)
		if !ok && bad < 10 {
			t.Errorf("run %s is %s with %d pending approvals (%d interrupted_side_effect)", id, status, pending, interrupted)
		}
		if !ok {
			bad++
		}
	}
	rows.Close()
	if bad > 0 {
		t.Errorf("%d runs neither completed nor waiting on an interrupted_side_effect approval", bad)
	}
	// No gap in a run's step indexes: step i exists for every i below
	// step_count, and nothing at or above it.
	var gaps int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM runs r WHERE
		(SELECT count(*) FROM steps s WHERE s.run_id = r.id) <> r.step_count OR
		(SELECT COALESCE(max(idx), -1) FROM steps s WHERE s.run_id = r.id) <> r.step_count - 1`).Scan(&gaps); err != nil {
		t.Fatal(err)
	}
	if gaps > 0 {
		t.Errorf("%d runs have a gap in their step indexes", gaps)
	}
	// One decision per step: no step was decided twice.
	var twice int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT step_id FROM events WHERE type = 'step.decided'
		GROUP BY step_id HAVING count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice > 0 {
		t.Errorf("%d steps have two decisions", twice)
	}
	// No (run, step) journaled twice, except a re-run an operator approved
	// (then at most twice), and no call that the chain does not record as
	// started.
	started := map[string]bool{}
	srows, err := st.Pool().Query(ctx, `SELECT DISTINCT step_id FROM events WHERE type = 'step.tool_started'`)
	if err != nil {
		t.Fatal(err)
	}
	for srows.Next() {
		var s string
		srows.Scan(&s)
		started[s] = true
	}
	srows.Close()
	calls := map[string]int{}
	for _, e := range readJournal(t, journalPath) {
		if e.kind != "J" {
			continue
		}
		calls[e.run+" "+e.step]++
		if !started[e.step] {
			t.Errorf("journaled call %s %s has no step.tool_started in the chain", e.run, e.step)
		}
	}
	dups := 0
	for k, n := range calls {
		step := strings.Fields(k)[1]
		if n > 1 && !(approved[step] && n == 2) {
			if dups < 10 {
				t.Errorf("(run, step) %s journaled %d times (re-run approved: %v)", k, n, approved[step])
			}
			dups++
		}
	}
	if dups > 0 {
		t.Errorf("%d calls ran twice without an approved re-run", dups)
	}
	// The chain verifies.
	rep, err := st.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Errorf("verify = %+v, %v", rep, err)
	}
	t.Logf("checked: %d calls journaled, %d events in one intact chain", len(calls), rep.Checked)
}

// relay forwards TCP connections to a target; blackhole stops it
// forwarding in both directions (bytes wait, as in a partition that TCP
// retransmits across), and heal lets them through.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	healed chan struct{}
}

func newRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target, healed: make(chan struct{})}
	close(r.healed)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *relay) serve(c net.Conn) {
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				r.wait()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	go pipe(up, c)
	go pipe(c, up)
}

func (r *relay) wait() {
	r.mu.Lock()
	ch := r.healed
	r.mu.Unlock()
	<-ch
}

func (r *relay) blackhole() {
	r.mu.Lock()
	if !r.cut {
		r.cut, r.healed = true, make(chan struct{})
	}
	r.mu.Unlock()
}

func (r *relay) heal() {
	r.mu.Lock()
	if r.cut {
		r.cut = false
		close(r.healed)
	}
	r.mu.Unlock()
}

// viaRelay returns dsn with its host and port replaced by the relay's.
func viaRelay(t *testing.T, dsn string, r *relay) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = r.ln.Addr().String()
	return u.String()
}

// faultLimits are the default limits with room for interruptions: each
// kill that cuts a step off counts as a failed step, and a run killed three
// times in a row would otherwise end on repeated_tool_failures, a limit
// doing its job but not what these tests look at.
func faultLimits() agentrt.Limits {
	l := agentrt.DefaultLimits()
	l.MaxConsecutiveToolFailures = 40
	return l
}
