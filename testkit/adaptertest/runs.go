package adaptertest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
)

// Runs is what every adapter's test rig has whatever its framework: the
// runs database's path, its store, and the events the Gate's observer
// hears. A rig embeds one and sets DB and Store once it opened the store.
type Runs struct {
	DB     string
	Store  agentrt.StoreReader
	Events Events
}

// UntilWaiting is run runID's pending approvals once the run waits for an
// operator.
func (r *Runs) UntilWaiting(t testing.TB, runID string) []agentrt.Approval {
	t.Helper()
	r.Events.AwaitStatus(t, r.Store, runID, agentrt.RunWaiting)
	return r.Approvals(t, runID, agentrt.ApprovalPending)
}

// Approvals lists run runID's approvals, of one status or ("") all.
func (r *Runs) Approvals(t testing.TB, runID string, status agentrt.ApprovalStatus) []agentrt.Approval {
	t.Helper()
	return Approvals(t, r.Store, runID, status)
}

// Operator runs the real agentrt binary on the runs database and fails t
// unless it exits 0; it returns what the binary printed.
func (r *Runs) Operator(t testing.TB, args ...string) string {
	t.Helper()
	return CLI(t, r.DB, args...)
}

// ApproveTheWrite waits until run runID waits on one approval, for
// append_note, which has not run yet, and approves it with the real
// binary.
func (r *Runs) ApproveTheWrite(t testing.TB, runID string, n *Notes) {
	t.Helper()
	pending := r.UntilWaiting(t, runID)
	if len(pending) != 1 || pending[0].Request.Spec.Name != "append_note" {
		t.Fatalf("pending approvals %+v, want one for append_note", pending)
	}
	if got := n.Count("append_note"); got != 0 {
		t.Fatalf("append_note ran %d times before approval", got)
	}
	r.Operator(t, "approve", runID, "-approval", pending[0].ID, "-by", "tester")
}

// ApproveTheEarlier is a restarted session collecting the decision asked
// before its restart: once run runID waits again, it fails t unless the
// run still has that one approval, earlier, which the real binary then
// approves.
func (r *Runs) ApproveTheEarlier(t testing.TB, runID string, earlier agentrt.Approval) {
	t.Helper()
	r.UntilWaiting(t, runID)
	if all := r.Approvals(t, runID, ""); len(all) != 1 || all[0].ID != earlier.ID {
		t.Fatalf("the restarted session opened another approval: %+v", all)
	}
	r.Operator(t, "approve", runID, "-approval", earlier.ID, "-by", "tester")
}

// CheckCutOffWriteRunsOnce is the end of a restart after a write was cut
// off: run runID, with its run behind done, waits on exactly one approval,
// which says the call was cut off and which nothing ran again by itself;
// the real binary approves it, the run ends, the write ran once, no other
// approval was asked, and the binary verifies the database.
func (r *Runs) CheckCutOffWriteRunsOnce(t testing.TB, runID string, n *Notes, done <-chan error) {
	t.Helper()
	pending := r.UntilWaiting(t, runID)
	if all := r.Approvals(t, runID, ""); len(all) != 1 || len(pending) != 1 {
		t.Fatalf("approvals %+v, want exactly one, pending", all)
	}
	a := pending[0]
	if a.Kind != agentrt.InterruptedSideEffect || !strings.Contains(string(a.Presentation), "outcome is unknown") {
		t.Errorf("the approval is %s %s, want one that says the call was cut off", a.Kind, a.Presentation)
	}
	if got := n.Count("append_note"); got != 0 {
		t.Fatalf("the cut-off write ran again %d times without an operator", got)
	}
	r.Operator(t, "approve", runID, "-approval", a.ID, "-by", "tester")
	Done(t, done)
	n.CheckAppended(t, "second line")
	if all := r.Approvals(t, runID, ""); len(all) != 1 {
		t.Errorf("the run asked %d approvals in all, want 1", len(all))
	}
	r.Operator(t, "verify")
}

// AwaitLeaseLapse fails t unless run runID is running under a dead
// process's lease, and returns once that lease lapsed, as a supervisor's
// restart would come.
func (r *Runs) AwaitLeaseLapse(t testing.TB, runID string) {
	t.Helper()
	killed, err := r.Store.GetRun(t.Context(), runID)
	if err != nil || killed.Status != agentrt.RunRunning {
		t.Fatalf("after SIGKILL the run is %+v, %v; want it RUNNING under the child's lease", killed.Status, err)
	}
	time.Sleep(time.Until(killed.LeaseExpiresAt) + 10*time.Millisecond)
}

// CrashConfig is the crash child's engine config: its write is allowed,
// and its lease is short so the restart need not wait long for it to
// lapse.
func CrashConfig() agentrt.EngineConfig {
	allow := agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.RemoteMutation: agentrt.Allow}
	return agentrt.EngineConfig{Policy: allow, LeaseTTL: 2 * time.Second}
}

// CrashMain is a TestMain's body for a test binary that is also its own
// crash child: with the environment variable env set it runs child on
// that directory instead of the tests (the child is killed before it
// returns, so any return is a failure); else it is Main(m). TestMain is
// `os.Exit(adaptertest.CrashMain(m, env, child))`.
func CrashMain(m *testing.M, env string, child func(dir string) error) int {
	dir := os.Getenv(env)
	if dir == "" {
		return Main(m)
	}
	fmt.Fprintln(os.Stderr, "the crash child returned:", child(dir))
	return 1
}

// KillMidWrite runs this test binary as its crash child (env=dir set;
// see CrashMain and HoldAppend), waits until its write began and kills it.
func KillMidWrite(t testing.TB, env, dir string) {
	t.Helper()
	child := StartChild(t, "", env+"="+dir)
	child.Line(t, "started")
	child.Kill()
}

// HoldAppend makes append_note say "started" on stdout when it is called
// and hold there until the process is killed: the crash child's write.
func (n *Notes) HoldAppend() {
	n.OnCall = func(tool string) {
		if tool != "append_note" {
			return
		}
		fmt.Println("started")
		select {} // held until SIGKILL
	}
}

// ReadRan is closed once read_note runs; it sets ReadHold.
func (n *Notes) ReadRan() <-chan struct{} {
	ran := make(chan struct{})
	n.ReadHold = func() error { close(ran); return nil }
	return ran
}

// AwaitRead fails t unless read (from ReadRan) is closed before the run
// behind done ends, within Wait: the read ran while the write waited.
func AwaitRead(t testing.TB, read <-chan struct{}, done <-chan error) {
	t.Helper()
	select {
	case <-read:
	case err := <-done:
		t.Fatalf("the run ended before the read ran: %v", err)
	case <-time.After(Wait):
		t.Fatal("the read did not run while the write waited: it waited for the write's approval")
	}
}

// CheckAppended reports on t unless append_note ran once and the note is
// its first line and then line.
func (n *Notes) CheckAppended(t testing.TB, line string) {
	t.Helper()
	if got := n.Count("append_note"); got != 1 {
		t.Errorf("append_note ran %d times, want exactly 1", got)
	}
	if got, want := n.Text(t), "first line\n"+line+"\n"; got != want {
		t.Errorf("the note is %q, want %q", got, want)
	}
}

// Done fails t unless the run behind done ends within Wait with no error.
func Done(t testing.TB, done <-chan error) {
	t.Helper()
	if err := Recv(t, done, "the run's end"); err != nil {
		t.Fatal(err)
	}
}
