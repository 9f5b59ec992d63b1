package agentrt_test

import (
	"context"
	"sync/atomic"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// countingStore counts the write transactions the engine commits.
type countingStore struct {
	agentrt.Store
	commits atomic.Int64
}

func (c *countingStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	evs, err := c.Store.Update(ctx, fn)
	if err == nil {
		c.commits.Add(1)
	}
	return evs, err
}

// A run of n steps (n-1 allowed tool calls, then complete) commits the run's
// creation, three transactions per tool step (the previous step's end with
// this step's start; the decision; the policy with the tool start), and three
// for the completing step (start, decision, the step with the run's end).
// Each commit is one synced transaction (synchronous=FULL).
func TestDriver_AtMostThreeCommitsPerToolStep(t *testing.T) {
	for _, n := range []int{2, 10, 50} {
		cs := &countingStore{Store: benchStoreT(t)}
		d, limits := kit.BenchDriver(t, cs, echoTool(false), n)
		run, err := d.Start(context.Background(), "count", limits)
		if err != nil || run.Status != agentrt.RunCompleted {
			t.Fatalf("run: %v %s", err, run.Status)
		}
		// close releases no lease for a finished run: nothing more is written.
		want := int64(1 + 3*(n-1) + 3)
		if got := cs.commits.Load(); got != want {
			t.Fatalf("n=%d: %d commits, want %d (3 per tool step)", n, got, want)
		}
		evs, err := cs.ListEvents(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		// Nothing was lost by folding commits: every step's events are there.
		if wantEvents := 2 + 5*(n-1) + 3; len(evs) != wantEvents {
			t.Fatalf("n=%d: %d events, want %d", n, len(evs), wantEvents)
		}
	}
}

// A gate's allowed call commits four transactions: the step's start, its
// decision, the policy decision with the tool start, and the outcome. A
// Gate defers nothing to a later write, unlike the Driver's loop: its
// caller reads the outcome at once, so the outcome is durable first.
// Siblings' calls made at once may share physical commits (group commit);
// this counts the Updates, which do not change.
func TestGate_AtMostFourCommitsPerAllowedCall(t *testing.T) {
	const n = 10
	ctx := context.Background()
	cs := &countingStore{Store: benchStoreT(t)}
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: cs, Policy: agentrt.DefaultPolicy(),
		Tools: []agentrt.Tool{echoTool(false)}}})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := g.Begin(ctx, "count", "count", agentrt.FrameworkLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	before := cs.commits.Load()
	for i := 0; i < n; i++ {
		if err := benchCall(ctx, gs, i); err != nil {
			t.Fatal(err)
		}
	}
	if got := cs.commits.Load() - before; got != 4*n {
		t.Fatalf("%d allowed calls: %d commits, want %d (4 per call)", n, got, 4*n)
	}
	evs, err := cs.ListEvents(ctx, "count")
	if err != nil {
		t.Fatal(err)
	}
	// run.created, run.started, then five events per call.
	if want := 2 + 5*n; len(evs) != want {
		t.Fatalf("%d events, want %d", len(evs), want)
	}
}
