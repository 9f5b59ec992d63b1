package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// Two integrators in two stores fold while two other stores commit: every
// event is folded once, none is skipped, and the checkpoints verify.
func TestIntegrator_PostgresTwoAtOnceFoldEachEventOnce(t *testing.T) {
	dsn := pgtest.Fresh(t)
	w1, w2, i1, i2 := open(t, dsn), open(t, dsn), open(t, dsn), open(t, dsn)
	for _, s := range []*postgres.Store{w1, w2, i1, i2} {
		defer s.Close()
	}
	ctx := context.Background()
	stop := make(chan struct{})
	var folders, writers sync.WaitGroup
	for _, s := range []*postgres.Store{i1, i2} {
		in, err := checkpoint.NewIntegrator(s, checkpoint.Config{MaxBatch: 16})
		if err != nil {
			t.Fatal(err)
		}
		folders.Add(1)
		go func() {
			defer folders.Done()
			for {
				if _, _, _, err := in.Fold(ctx); err != nil {
					t.Error(err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	for i, s := range []*postgres.Store{w1, w2} {
		writers.Add(1)
		go func() { defer writers.Done(); enginekit.AppendEvents(t, s, fmt.Sprintf("r%d", i), 120) }()
	}
	writers.Wait()
	close(stop)
	folders.Wait()
	in, _ := checkpoint.NewIntegrator(i1, checkpoint.Config{})
	enginekit.FoldAll(t, i1, in)
	var events, leaves, distinct, maxLeaf int64
	if err := i1.Pool().QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM events), COUNT(*), COUNT(DISTINCT seq), MAX(leaf) FROM event_leaves`).Scan(&events, &leaves, &distinct, &maxLeaf); err != nil {
		t.Fatal(err)
	}
	if events != 240 || leaves != events || distinct != events || maxLeaf != events-1 {
		t.Fatalf("events %d, leaves %d, distinct %d, max leaf %d", events, leaves, distinct, maxLeaf)
	}
	rep, err := checkpoint.Verify(ctx, i1, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Leaves != events {
		t.Fatalf("Verify: %v %+v leaves %d", err, rep.Problem, rep.Leaves)
	}
}

// One store holds the integrator's advisory lock at a time; releasing it
// lets another take it.
func TestCheckpointElect_OneHolderPerDatabase(t *testing.T) {
	_, a, b := openPair(t)
	ctx := context.Background()
	release, ok, err := a.CheckpointElect(ctx)
	if err != nil || !ok {
		t.Fatalf("first: ok %v %v", ok, err)
	}
	if _, ok, err := b.CheckpointElect(ctx); err != nil || ok {
		t.Fatalf("second while held: ok %v %v", ok, err)
	}
	release()
	rel2, ok, err := b.CheckpointElect(ctx)
	if err != nil || !ok {
		t.Fatalf("after release: ok %v %v", ok, err)
	}
	rel2()
}

// A receipt made on PostgreSQL, carried as JSON, verifies with only the
// public key's text; with one event's hash altered it fails.
func TestReceipt_MadeOnPostgresVerifiesOffline(t *testing.T) {
	dsn := pgtest.Fresh(t)
	st := open(t, dsn)
	defer st.Close()
	enginekit.AppendEvents(t, st, "r", 20)
	rc, v := enginekit.SignedReceipt(t, st, "pg-log", "r")
	b, _ := json.Marshal(rc)
	var carried checkpoint.Receipt
	if err := json.Unmarshal(b, &carried); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.VerifyReceipt(carried, v, nil); err != nil {
		t.Fatalf("offline: %v", err)
	}
	carried.Events[5].Hash = strings.Repeat("1", 64)
	if _, err := checkpoint.VerifyReceipt(carried, v, nil); err == nil {
		t.Fatal("an altered receipt verified")
	}
}

// With synchronous checkpoints, 4 runs driven at once on PostgreSQL have
// every event folded the moment each driver returns, though the
// background interval is an hour; without it some are not.
func TestProcess_PostgresSyncFoldsEveryEventBeforeTheStepReturns(t *testing.T) {
	for _, syncOn := range []bool{true, false} {
		st := open(t, pgtest.Fresh(t))
		defer st.Close()
		r, err := checkpoint.Process{Interval: time.Hour, Sync: syncOn}.Start(st, func(err error) { t.Error(err) })
		if err != nil || r == nil {
			t.Fatalf("Start: %v %v", r, err)
		}
		d, err := agentrt.NewDriver(agentrt.Config{
			EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{enginekit.EchoTool(nil)},
				AwaitCheckpoint: r.EngineAwait()},
			Agent: enginekit.BenchAgent{N: 3},
		})
		if err != nil {
			t.Fatal(err)
		}
		limits := agentrt.DefaultLimits()
		limits.MaxSteps = 4
		ctx := context.Background()
		var wg sync.WaitGroup
		unfolded := make(chan int, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run, err := d.Start(ctx, "sync", limits)
				if err != nil || run.Status != agentrt.RunCompleted {
					t.Errorf("run: %v %s", err, run.Status)
					return
				}
				evs, err := st.ListEvents(ctx, run.ID)
				if err != nil {
					t.Error(err)
					return
				}
				leaves, err := st.CheckpointLeavesOf(ctx, run.ID, evs[0].Seq, evs[len(evs)-1].Seq)
				if err != nil {
					t.Error(err)
					return
				}
				unfolded <- len(evs) - len(leaves)
			}()
		}
		wg.Wait()
		r.Stop()
		close(unfolded)
		total := 0
		for n := range unfolded {
			total += n
		}
		if syncOn && total != 0 {
			t.Fatalf("sync: %d events unfolded when their runs returned", total)
		}
		if !syncOn && total == 0 {
			t.Fatal("not sync: every event folded, though the interval is an hour")
		}
	}
}

// A transaction that took a seq first and commits after one that took the
// next seq: the integrator folding between the two commits must not fold
// past the open one, or its event is never folded. Raw inserts with the
// chain head's trigger off stand for two runs' commits, which share no
// row (ADR 0015); the integrator reads only seq, hash and xid.
func TestIntegrator_PostgresFoldsACommitThatTookASmallerSeqLater(t *testing.T) {
	st := open(t, pgtest.Fresh(t))
	defer st.Close()
	ctx := context.Background()
	enginekit.AppendEvents(t, st, "r", 0)
	insert := func(tx pgx.Tx, seq int64) {
		t.Helper()
		for _, q := range []string{"SET LOCAL session_replication_role = replica",
			fmt.Sprintf(`INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (%d, 'r', '', '2026-01-01T00:00:00Z', 'run.created', '{}', '%064x')`, seq, seq)} {
			if _, err := tx.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	first, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	insert(first, 1000)
	second, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	insert(second, 1001)
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	in, err := checkpoint.NewIntegrator(st, checkpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := in.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	enginekit.FoldAll(t, st, in)
	var leaves int64
	var seqs string
	if err := st.Pool().QueryRow(ctx, `SELECT COUNT(*), COALESCE(string_agg(seq::text, ',' ORDER BY leaf), '') FROM event_leaves`).Scan(&leaves, &seqs); err != nil {
		t.Fatal(err)
	}
	if leaves != 2 || seqs != "1000,1001" {
		t.Fatalf("folded seqs [%s]; want 1000 and 1001, each once", seqs)
	}
}

// The engine's writer is busy in a transaction (a commit of a step that
// has not ended): a fold of the events committed before it still writes
// its checkpoint, on a connection of its own, rather than waiting for the
// writer's turn as it did under load.
func TestIntegrator_PostgresFoldsWhileTheEngineWriterIsBusy(t *testing.T) {
	st := open(t, pgtest.Fresh(t))
	defer st.Close()
	ctx := context.Background()
	enginekit.AppendEvents(t, st, "r", 3)
	entered, release := make(chan struct{}), make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		_, err := st.Update(ctx, func(tx agentrt.Tx) error {
			close(entered)
			<-release
			return nil
		})
		updated <- err
	}()
	<-entered
	in, err := checkpoint.NewIntegrator(st, checkpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Other tests' transactions in the cluster may hold the watermark
	// back a while: fold until the three are in, or give up.
	folded := make(chan error, 1)
	go func() {
		for {
			if _, _, _, err := in.Fold(ctx); err != nil {
				folded <- err
				return
			}
			var leaves int64
			if err := st.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM event_leaves`).Scan(&leaves); err != nil || leaves >= 3 {
				folded <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	select {
	case err := <-folded:
		close(release)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		close(release)
		<-folded
		t.Fatal("the fold waited for the engine's writer, busy in an open transaction")
	}
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	var leaves int64
	if err := st.Pool().QueryRow(ctx, `SELECT COUNT(*) FROM event_leaves`).Scan(&leaves); err != nil {
		t.Fatal(err)
	}
	if leaves != 3 {
		t.Fatalf("%d events folded; want the 3 committed before the busy transaction", leaves)
	}
}

// BenchmarkCheckpointLag runs 16 runs of 20 steps at once on PostgreSQL
// with the background integrator (and with synchronous mode) and reports
// each event's lag to the checkpoint that folded it.
func BenchmarkCheckpointLag(b *testing.B) {
	for _, syncOn := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", syncOn), func(b *testing.B) {
			st, err := postgres.Open(context.Background(), pgtest.Fresh(b))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			enginekit.BenchCheckpointLag(b, st, 20, syncOn)
		})
	}
}
