package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// ReceiptFormat names the receipt layout a file holds.
const ReceiptFormat = "agentrt-receipt/1"

// Receipt proves that a run's events are in the log a checkpoint
// commits to: each event with its stored chain hash, its leaf index and an
// inclusion proof against the checkpoint. See docs/receipts.md.
type Receipt struct {
	Format string `json:"format"`
	RunID  string `json:"run_id"`
	// Checkpoint is the checkpoint's text; Signed, the same as a signed
	// note when the log signs its checkpoints.
	Checkpoint string         `json:"checkpoint"`
	Signed     string         `json:"signed,omitempty"`
	Events     []ReceiptEvent `json:"events"`
}

// ReceiptEvent is one event of a receipt.
type ReceiptEvent struct {
	Leaf  int64         `json:"leaf"`
	Hash  string        `json:"hash"`
	Event agentrt.Event `json:"event"`
	// Proof is the inclusion proof of the leaf in the checkpoint's tree.
	Proof tlog.RecordProof `json:"proof"`
}

// ErrNotFolded is what MakeReceipt returns while some of a run's events
// are not folded into the checkpoint yet.
var ErrNotFolded = errors.New("agentrt: the run has events not folded into a checkpoint yet")

// MakeReceipt builds the receipt of a run's events (as read from the
// store) against the latest checkpoint, which must fold every one of them.
func MakeReceipt(ctx context.Context, st Store, runID string, events []agentrt.Event) (Receipt, error) {
	if len(events) == 0 {
		return Receipt{}, fmt.Errorf("%w: run %s has no events", agentrt.ErrNotFound, runID)
	}
	c, ok, err := st.CheckpointLatest(ctx)
	if err != nil {
		return Receipt{}, err
	}
	leaves, err := st.CheckpointLeavesOf(ctx, runID, events[0].Seq, events[len(events)-1].Seq)
	if err != nil {
		return Receipt{}, err
	}
	if !ok || len(leaves) != len(events) {
		return Receipt{}, fmt.Errorf("%w: %d of %d folded (agentrt checkpoint folds them now)", ErrNotFolded, len(leaves), len(events))
	}
	rc := Receipt{Format: ReceiptFormat, RunID: runID, Checkpoint: c.Body, Signed: c.Signed}
	r := newCachedReader(ctx, st)
	for i, l := range leaves {
		if l.Seq != events[i].Seq || l.Index >= c.Size {
			return Receipt{}, fmt.Errorf("%w: event %d is not in checkpoint %d", ErrNotFolded, events[i].Seq, c.Size)
		}
		proof, err := tlog.ProveRecord(c.Size, l.Index, r)
		if err != nil {
			return Receipt{}, fmt.Errorf("agentrt: proving event %d: %w", l.Seq, err)
		}
		rc.Events = append(rc.Events, ReceiptEvent{Leaf: l.Index, Hash: l.Hash, Event: events[i], Proof: proof})
	}
	return rc, nil
}

// VerifyReceipt checks a receipt with no database: its checkpoint must be
// signed by v (when v is set) or be the kept checkpoint (when kept is set;
// one of the two is required), and every event's hash must be included in
// that checkpoint's tree at its leaf. It returns the checkpoint.
func VerifyReceipt(rc Receipt, v note.Verifier, kept *Checkpoint) (Checkpoint, error) {
	if rc.Format != ReceiptFormat {
		return Checkpoint{}, fmt.Errorf("%w: the receipt's format is %q, not %q", ErrMalformed, clip(rc.Format), ReceiptFormat)
	}
	c, err := Parse(rc.Checkpoint)
	if err != nil {
		return Checkpoint{}, err
	}
	switch {
	case v == nil && kept == nil:
		return Checkpoint{}, errors.New("agentrt: a receipt is checked against the log's public key or a kept checkpoint; give one")
	case v != nil:
		opened, err := Open([]byte(rc.Signed), v)
		if err != nil {
			return Checkpoint{}, err
		}
		if opened.Body != rc.Checkpoint {
			return Checkpoint{}, errors.New("agentrt: the receipt's signed note holds another checkpoint than the one its proofs are against")
		}
	}
	if kept != nil && (kept.Size != c.Size || kept.Root != c.Root) {
		return Checkpoint{}, fmt.Errorf("agentrt: the receipt is against checkpoint %d, not the kept checkpoint %d", c.Size, kept.Size)
	}
	if len(rc.Events) == 0 {
		return Checkpoint{}, fmt.Errorf("%w: the receipt holds no events", ErrMalformed)
	}
	for i, e := range rc.Events {
		switch {
		case e.Event.RunID != rc.RunID:
			return Checkpoint{}, fmt.Errorf("agentrt: event %d of the receipt belongs to run %q, not %q", e.Event.Seq, clip(e.Event.RunID), clip(rc.RunID))
		case i > 0 && e.Event.Seq <= rc.Events[i-1].Event.Seq:
			return Checkpoint{}, fmt.Errorf("agentrt: the receipt's events are not in seq order at seq %d", e.Event.Seq)
		case e.Leaf < 0 || e.Leaf >= c.Size:
			return Checkpoint{}, fmt.Errorf("agentrt: event %d's leaf %d is outside checkpoint %d", e.Event.Seq, e.Leaf, c.Size)
		}
		if err := tlog.CheckRecord(e.Proof, c.Size, c.Root, e.Leaf, tlog.RecordHash([]byte(e.Hash))); err != nil {
			return Checkpoint{}, fmt.Errorf("agentrt: event %d (leaf %d) is not in checkpoint %d with hash %s: %v", e.Event.Seq, e.Leaf, c.Size, clip(e.Hash), err)
		}
	}
	return c, nil
}
