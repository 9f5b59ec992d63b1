package checkpoint_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/sqlite"
	"golang.org/x/mod/sumdb/note"
	_ "modernc.org/sqlite"
)

// openDB is a fresh runs database and its path.
var openDB = testrig.DB

func integrator(t *testing.T, st checkpoint.Store, signer note.Signer) *checkpoint.Integrator {
	t.Helper()
	in, err := checkpoint.NewIntegrator(st, checkpoint.Config{Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

var (
	rawDB    = enginekit.OpenRaw
	mustExec = enginekit.MustExec
)

// Six hundred events fold into checkpoints of at most 256, each consistent
// with the one before, and verify finds every event included.
func TestIntegrator_FoldsEveryEventOnceInBatches(t *testing.T) {
	st, _ := openDB(t)
	enginekit.AppendEvents(t, st, "r1", 599) // and run.created's own: none, 599 events
	ctx := context.Background()
	n, latest, ok, err := integrator(t, st, nil).Fold(ctx)
	if err != nil || !ok {
		t.Fatalf("Fold: %v (ok %v)", err, ok)
	}
	if n != 599 || latest.Size != 599 {
		t.Fatalf("folded %d, size %d; want 599", n, latest.Size)
	}
	cps, err := st.CheckpointList(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, c := range cps {
		sizes = append(sizes, c.Size)
	}
	if fmt.Sprint(sizes) != "[256 512 599]" {
		t.Fatalf("checkpoint sizes %v, want [256 512 599]", sizes)
	}
	again, _, _, err := integrator(t, st, nil).Fold(ctx)
	if err != nil || again != 0 {
		t.Fatalf("a second fold folded %d (%v), want 0", again, err)
	}
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil {
		t.Fatalf("Verify: %v %+v", err, rep.Problem)
	}
	if rep.Leaves != 599 || rep.Checkpoints != 3 {
		t.Fatalf("verified %d leaves in %d checkpoints, want 599 in 3", rep.Leaves, rep.Checkpoints)
	}
}

// Two integrators on two handles of one file fold while events are
// written: every event is folded exactly once, and the checkpoints verify.
func TestIntegrator_TwoAtOnceFoldEachEventOnce(t *testing.T) {
	st, p := openDB(t)
	other, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for _, s := range []*sqlite.Store{st, other} {
		in := integrator(t, s, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, _, _, err := in.Fold(ctx); err != nil {
					errs <- err
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
	enginekit.AppendEvents(t, st, "r1", 150)
	enginekit.AppendEvents(t, other, "r2", 150)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, _, _, err := integrator(t, st, nil).Fold(ctx); err != nil {
		t.Fatal(err)
	}
	var leaves, distinct, maxLeaf int64
	db := rawDB(t, p)
	if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT seq), MAX(leaf) FROM event_leaves").Scan(&leaves, &distinct, &maxLeaf); err != nil {
		t.Fatal(err)
	}
	if leaves != 300 || distinct != 300 || maxLeaf != 299 {
		t.Fatalf("leaves %d, distinct seqs %d, max leaf %d; want 300, 300, 299", leaves, distinct, maxLeaf)
	}
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Leaves != 300 {
		t.Fatalf("Verify: %v %+v leaves %d", err, rep.Problem, rep.Leaves)
	}
}

// An event altered after it was folded, with its stored hash recomputed
// as a forger would, is no longer included in the checkpoint.
func TestVerify_AlteredFoldedEventFails(t *testing.T) {
	st, p := openDB(t)
	enginekit.AppendEvents(t, st, "r1", 10)
	ctx := context.Background()
	if _, _, _, err := integrator(t, st, nil).Fold(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, rawDB(t, p), "UPDATE events SET hash = ? WHERE seq = 4", strings.Repeat("ab", 32))
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem == nil || rep.Problem.Seq != 4 || !strings.Contains(rep.Problem.Detail, "altered") {
		t.Fatalf("problem %+v, want event 4 altered", rep.Problem)
	}
}

// A kept checkpoint is extended by a log that grew, and not by one whose
// tail (events, leaves and checkpoints) was cut.
func TestVerify_KeptCheckpointFailsOnACutTail(t *testing.T) {
	st, p := openDB(t)
	ctx := context.Background()
	enginekit.AppendEvents(t, st, "r1", 5)
	in := integrator(t, st, nil)
	if _, _, _, err := in.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	enginekit.AppendEvents(t, st, "r1", 5)
	_, kept, _, err := in.Fold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enginekit.AppendEvents(t, st, "r1", 3)
	if _, _, _, err := in.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{Kept: &kept})
	if err != nil || rep.Problem != nil || !rep.KeptExtended {
		t.Fatalf("a grown log: %v %+v extended %v", err, rep.Problem, rep.KeptExtended)
	}
	db := rawDB(t, p)
	for _, q := range []string{"DELETE FROM checkpoints WHERE size > 5", "DELETE FROM event_leaves WHERE leaf >= 5",
		"DELETE FROM tree_hashes WHERE id >= 8", "DELETE FROM events WHERE seq > 5"} {
		mustExec(t, db, q)
	}
	rep, err = checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{Kept: &kept})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem == nil || rep.KeptExtended || !strings.Contains(rep.Problem.Detail, "cut") {
		t.Fatalf("a cut tail: problem %+v extended %v", rep.Problem, rep.KeptExtended)
	}
}

// A receipt of a signed log verifies with the public key alone, and fails
// for an altered event, another key, or a kept checkpoint it is not against.
func TestReceipt_VerifiesOfflineAndFailsWhenAltered(t *testing.T) {
	st, _ := openDB(t)
	enginekit.AppendEvents(t, st, "r1", 4)
	enginekit.AppendEvents(t, st, "r2", 3)
	enginekit.AppendEvents(t, st, "r1", 4)
	rc, v := enginekit.SignedReceipt(t, st, "agentrt-test", "r1")
	c, err := checkpoint.VerifyReceipt(rc, v, nil)
	if err != nil || c.Size != 11 || len(rc.Events) != 8 {
		t.Fatalf("VerifyReceipt: %v size %d events %d", err, c.Size, len(rc.Events))
	}
	altered := rc
	altered.Events = append([]checkpoint.ReceiptEvent(nil), rc.Events...)
	altered.Events[2].Hash = strings.Repeat("0", 64)
	if _, err := checkpoint.VerifyReceipt(altered, v, nil); err == nil || !strings.Contains(err.Error(), "is not in checkpoint") {
		t.Fatalf("an altered event: %v", err)
	}
	_, otherKey, _ := checkpoint.NewKey("agentrt-test")
	ov, _ := checkpoint.ParseVerifier(otherKey)
	if _, err := checkpoint.VerifyReceipt(rc, ov, nil); err == nil {
		t.Fatal("a receipt verified with another key")
	}
	wrong := c
	wrong.Size--
	if _, err := checkpoint.VerifyReceipt(rc, nil, &wrong); err == nil {
		t.Fatal("a receipt verified against a kept checkpoint it is not against")
	}
	if _, err := checkpoint.VerifyReceipt(rc, nil, &c); err != nil {
		t.Fatalf("against its own checkpoint kept: %v", err)
	}
}

// Over 3,000 events (the rebuilt tree pruned to its frontier many times)
// verify passes, and an event altered deep in the log is named by seq.
func TestVerify_RebuiltTreeFindsAnAlteredEventDeepInALargeLog(t *testing.T) {
	st, p := openDB(t)
	ctx := context.Background()
	enginekit.FillRun(t, st, "r", 3000, nil)
	if _, _, _, err := integrator(t, st, nil).Fold(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil || rep.Problem != nil || rep.Leaves != 3000 || rep.Checkpoints != 12 {
		t.Fatalf("Verify: %v %+v leaves %d checkpoints %d", err, rep.Problem, rep.Leaves, rep.Checkpoints)
	}
	mustExec(t, rawDB(t, p), "UPDATE events SET hash = ? WHERE seq = 2500", strings.Repeat("cd", 32))
	rep, err = checkpoint.Verify(ctx, st, checkpoint.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem == nil || rep.Problem.Seq != 2500 || !strings.Contains(rep.Problem.Detail, "altered") {
		t.Fatalf("problem %+v, want event 2500 altered", rep.Problem)
	}
}
