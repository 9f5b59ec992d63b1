package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/agentrt/agentrt/storetest"
)

// A budget worker process is this test binary run again with these
// variables set: it runs a Worker on the DSN, appending a line to the
// journal for each request that reaches its model, until SIGTERM.
const (
	envBudgetDSN     = "AGENTRT_BUDGET_WORKER_DSN"
	envBudgetJournal = "AGENTRT_BUDGET_WORKER_JOURNAL"
	envBudgetOwner   = "AGENTRT_BUDGET_WORKER_OWNER"
)

func budgetWorker(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	f, err := os.OpenFile(os.Getenv(envBudgetJournal), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st := open(t, os.Getenv(envBudgetDSN))
	defer st.Close()
	cfg, agent := storetest.RaceEngine(st, os.Getenv(envBudgetOwner), func() {
		fmt.Fprintf(f, "request %d\n", os.Getpid())
	})
	wc := agentrt.DefaultWorkerConfig()
	wc.EngineConfig, wc.Agent, wc.Concurrency, wc.Poll = cfg, agent, 8, 10*time.Millisecond
	w, err := agentrt.NewWorker(wc)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// 32 runs share one budget sized for a third of their calls, claimed by
// four worker processes on one Postgres database: exactly as many calls
// as the ceiling holds are reserved, every other run ends limit_budget
// with its refused call never sent (the workers journal every request that
// reaches a model), the amount held never passes the ceiling at any
// commit, and the chain verifies.
func TestBudget_ConcurrentRunsNeverReserveBeyondTheCeiling(t *testing.T) {
	if os.Getenv(envBudgetDSN) != "" {
		budgetWorker(t)
		return
	}
	dsn := pgtest.Fresh(t)
	ctx := context.Background()
	st := open(t, dsn)
	defer st.Close()
	const runs = 32
	b := storetest.AddRaceBudget(t, st, runs)
	ids := storetest.RaceRunIDs(runs)
	cfg, agent := storetest.RaceEngine(st, "enqueuer", nil)
	enq, err := agentrt.NewDriver(agentrt.Config{EngineConfig: cfg, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := enq.EnqueueWithID(ctx, id, "race", storetest.RaceLimits()); err != nil {
			t.Fatal(err)
		}
	}
	journal := filepath.Join(t.TempDir(), "requests.log")
	var procs []*exec.Cmd
	for i := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBudget_ConcurrentRunsNeverReserveBeyondTheCeiling$", "-test.count=1")
		cmd.Env = append(os.Environ(), envBudgetDSN+"="+dsn, envBudgetJournal+"="+journal, fmt.Sprintf("%s=worker-%d", envBudgetOwner, i))
		kit.StartChild(t, cmd, "ready", time.Minute, fmt.Sprintf("worker %d", i))
		procs = append(procs, cmd)
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
	}
	storetest.AwaitEnded(t, st, ids, 2*time.Minute)
	for _, p := range procs {
		if err := p.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
	data, err := os.ReadFile(journal)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	pids := map[string]bool{}
	for _, l := range lines {
		pids[l] = true
	}
	if len(pids) < 2 {
		t.Logf("requests came from %d worker process(es)", len(pids))
	}
	storetest.CheckBudgetRace(t, st, b, ids, int64(len(lines)))
	// Which workers ran the runs.
	owners := map[string]bool{}
	rs, err := st.ListReservations(ctx, agentrt.ReservationFilter{BudgetID: b.ID}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		owners[r.RunID] = true
	}
	t.Logf("%d reservations over %d runs from %d worker processes", len(rs), len(owners), len(pids))
}
