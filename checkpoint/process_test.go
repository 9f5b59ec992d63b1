package checkpoint_test

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/enginekit"
)

// syncDriver is a driver of steps-step runs on st whose commits wait on
// await (nil: none).
func syncDriver(t *testing.T, st agentrt.Store, await func(context.Context, agentrt.Event) error, steps int) (*agentrt.Driver, agentrt.Limits) {
	t.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{enginekit.EchoTool(nil)},
			AwaitCheckpoint: await},
		Agent: enginekit.BenchAgent{N: steps},
	})
	if err != nil {
		t.Fatal(err)
	}
	limits := agentrt.DefaultLimits()
	limits.MaxSteps = steps + 1
	return d, limits
}

// unfolded counts a run's stored events no checkpoint folds yet.
func unfolded(t *testing.T, st interface {
	agentrt.StoreReader
	checkpoint.Store
}, runID string) (unfolded, total int) {
	t.Helper()
	ctx := context.Background()
	evs, err := st.ListEvents(ctx, runID)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events of %s: %d, %v", runID, len(evs), err)
	}
	leaves, err := st.CheckpointLeavesOf(ctx, runID, evs[0].Seq, evs[len(evs)-1].Seq)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs) - len(leaves), len(evs)
}

// With -checkpoint-sync, a run's events are all folded the moment its
// driver returns, though the background integrator's interval is an hour;
// without it some are not (so the test can fail).
func TestProcess_SyncFoldsEveryEventBeforeTheStepReturns(t *testing.T) {
	for _, sync := range []bool{true, false} {
		st, _ := openDB(t)
		r, err := checkpoint.Process{Interval: time.Hour, Sync: sync}.Start(st, func(err error) { t.Error(err) })
		if err != nil || r == nil {
			t.Fatalf("Start: %v %v", r, err)
		}
		d, limits := syncDriver(t, st, r.EngineAwait(), 3)
		run, err := d.Start(context.Background(), "sync", limits)
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("run: %v %s", err, run.Status)
		}
		n, total := unfolded(t, st, run.ID)
		r.Stop()
		if sync && n != 0 {
			t.Fatalf("sync: %d of %d events unfolded when the run returned", n, total)
		}
		if !sync && n == 0 {
			t.Fatalf("not sync: all %d events folded, though the interval is an hour", total)
		}
	}
}

// Start runs an integrator that folds on its interval; Stop ends it, with
// no goroutine of it left, gives the role back (a second integrator can
// take it), and may be called twice.
func TestProcess_StopEndsTheIntegratorAndLeaksNoGoroutine(t *testing.T) {
	st, _ := openDB(t)
	enginekit.AppendEvents(t, st, "r1", 5)
	before := runtime.NumGoroutine()
	r, err := checkpoint.Process{Interval: 5 * time.Millisecond}.Start(st, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, ok, err := st.CheckpointLatest(ctx); err == nil && ok && c.Size == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background integrator folded nothing in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.Stop()
	r.Stop()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Stop, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
	release, ok, err := st.CheckpointElect(ctx)
	if err != nil || !ok {
		t.Fatalf("the role was not given back: ok %v %v", ok, err)
	}
	release()
}

// The flags fill a Process; "off" turns the integrator off, and an
// unreadable key file is refused by Start, naming it.
func TestProcess_FlagsAndKeyFile(t *testing.T) {
	var p checkpoint.Process
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p.Flags(fs)
	p.SyncFlag(fs)
	if err := fs.Parse([]string{"-checkpoint-interval", "off", "-checkpoint-sync"}); err != nil {
		t.Fatal(err)
	}
	st, _ := openDB(t)
	if r, err := p.Start(st, nil); r != nil || err != nil || !p.Sync {
		t.Fatalf("off: %v %v sync %v", r, err, p.Sync)
	}
	if err := fs.Parse([]string{"-checkpoint-interval", "0s"}); err == nil {
		t.Fatal("-checkpoint-interval 0s was accepted")
	}
	key := filepath.Join(t.TempDir(), "ckpt.key")
	skey, _, _ := checkpoint.NewKey("t")
	if err := os.WriteFile(key, []byte(skey), 0o644); err != nil {
		t.Fatal(err)
	}
	p = checkpoint.Process{KeyFile: key}
	if _, err := p.Start(st, nil); err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("a group-readable key: %v", err)
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := p.Start(st, nil)
	if err != nil || r == nil {
		t.Fatalf("an owner-only key: %v", err)
	}
	r.Stop()
}
