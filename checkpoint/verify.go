package checkpoint

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// VerifyOptions says what Verify checks beyond the log's own consistency.
type VerifyOptions struct {
	// Stale is how long an event may stay unfolded before Verify reports
	// it. Zero means one minute.
	Stale time.Duration
	// Now is the clock Stale is measured on. Nil is time.Now.
	Now func() time.Time
	// Verifier, when set, must verify every checkpoint's signature, and
	// every checkpoint must be signed.
	Verifier note.Verifier
	// Kept, when set, is a checkpoint kept elsewhere: the log must extend
	// it (be at least as large, and consistent with it).
	Kept *Checkpoint
	// Progress, when set, is called with the leaves checked so far.
	Progress func(checked, total int64)
}

// Report is what Verify found. Problem is nil when the log is sound.
type Report struct {
	// Checkpoints is how many were checked; Latest is the newest.
	Checkpoints int64       `json:"checkpoints"`
	Latest      *Checkpoint `json:"latest,omitempty"`
	// Leaves is how many folded events were checked included in Latest.
	Leaves int64 `json:"leaves"`
	// Unfolded counts events older than Stale not folded; FirstUnfolded is
	// the smallest such seq.
	Unfolded      int64 `json:"unfolded,omitempty"`
	FirstUnfolded int64 `json:"first_unfolded,omitempty"`
	// KeptExtended says the log extends the kept checkpoint.
	KeptExtended bool     `json:"kept_extended,omitempty"`
	Problem      *Problem `json:"problem,omitempty"`
}

// Problem is the first thing Verify found wrong.
type Problem struct {
	// Size is the checkpoint's size, Leaf and Seq the event's, where one
	// applies.
	Size   int64  `json:"size,omitempty"`
	Leaf   int64  `json:"leaf,omitempty"`
	Seq    int64  `json:"seq,omitempty"`
	Detail string `json:"detail"`
}

// verifyWindow is how many leaves Verify reads at once.
const verifyWindow = 4096

// Verify checks the log: each checkpoint's text, signature, link to the
// one before and consistency proof from it; every folded event's hash
// included in the latest checkpoint by an inclusion proof; no event older
// than Stale unfolded; and the kept checkpoint extended. It writes nothing.
func Verify(ctx context.Context, st Store, o VerifyOptions) (Report, error) {
	if o.Stale == 0 {
		o.Stale = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var rep Report
	r := newCachedReader(ctx, st)
	latest, roots, err := verifyCheckpoints(ctx, st, r, o, &rep)
	if err != nil || rep.Problem != nil {
		return rep, err
	}
	if latest != nil {
		if err := verifyLeaves(ctx, st, r, *latest, roots, o, &rep); err != nil || rep.Problem != nil {
			return rep, err
		}
	}
	if o.Kept != nil {
		verifyKept(r, latest, *o.Kept, &rep)
		if rep.Problem != nil {
			return rep, nil
		}
	}
	n, first, err := st.CheckpointUnfolded(ctx, o.Now().Add(-o.Stale))
	if err != nil {
		return rep, err
	}
	rep.Unfolded, rep.FirstUnfolded = n, first
	if n > 0 {
		rep.Problem = &Problem{Seq: first, Detail: fmt.Sprintf("%d event(s) committed more than %v ago are not folded into any checkpoint, the first at seq %d: no integrator is running, or events were inserted around it", n, o.Stale, first)}
	}
	return rep, nil
}

// sizeRoot is a checkpoint's size and root, as verifyLeaves checks them.
type sizeRoot struct {
	size int64
	root tlog.Hash
}

func verifyCheckpoints(ctx context.Context, st Store, r *cachedReader, o VerifyOptions, rep *Report) (*Checkpoint, []sizeRoot, error) {
	var prev *Checkpoint
	var roots []sizeRoot
	for {
		after := int64(0)
		if prev != nil {
			after = prev.Size
		}
		page, err := st.CheckpointList(ctx, after, 1000)
		if err != nil {
			return nil, nil, err
		}
		if len(page) == 0 {
			return prev, roots, nil
		}
		for i := range page {
			c := page[i]
			if p := checkOne(r, prev, c, o.Verifier); p != nil {
				rep.Problem = p
				return nil, nil, nil
			}
			roots = append(roots, sizeRoot{c.Size, c.Root})
			rep.Checkpoints++
			prev = &c
			rep.Latest = prev
		}
	}
}

// checkOne checks a checkpoint on its own and against the one before.
func checkOne(r tlog.HashReader, prev *Checkpoint, c Checkpoint, v note.Verifier) *Problem {
	bad := func(format string, a ...any) *Problem {
		return &Problem{Size: c.Size, Detail: fmt.Sprintf("checkpoint %d: ", c.Size) + fmt.Sprintf(format, a...)}
	}
	parsed, err := Parse(c.Body)
	switch {
	case err != nil:
		return bad("%v", err)
	case parsed.Size != c.Size || parsed.Root != c.Root || parsed.Prev != c.Prev:
		return bad("its text does not say the size, root and previous hash stored beside it")
	case BodyHash(c.Body) != c.Hash:
		return bad("its hash is not the SHA-256 of its text")
	case prev == nil && c.Prev != "":
		return bad("it is the first checkpoint but names a previous one: earlier checkpoints were deleted")
	case prev != nil && c.Prev != prev.Hash:
		return bad("it does not name checkpoint %d as its previous one", prev.Size)
	}
	if v != nil {
		if c.Signed == "" {
			return bad("it is not signed")
		}
		opened, err := Open([]byte(c.Signed), v)
		if err != nil {
			return bad("%v", err)
		}
		if opened.Body != c.Body {
			return bad("its signed note holds another text")
		}
	}
	th, err := tlog.TreeHash(c.Size, r)
	if err != nil {
		return bad("the stored tree cannot give its hash: %v", err)
	}
	if th != c.Root {
		return bad("the stored tree's hash at size %d is not its root: the tree was altered", c.Size)
	}
	if prev != nil {
		proof, err := tlog.ProveTree(c.Size, prev.Size, r)
		if err == nil {
			err = tlog.CheckTree(proof, c.Size, c.Root, prev.Size, prev.Root)
		}
		if err != nil {
			return bad("it is not consistent with checkpoint %d: %v", prev.Size, err)
		}
	}
	return nil
}

// verifyLeaves checks every leaf in index order: its event is there, and
// the tree rebuilt in memory from the events' hashes has, at each
// checkpoint's size, that checkpoint's root. Each folded event is so
// proved included in every checkpoint from its own on, as inclusion
// proofs would, with one hash or two a leaf and no stored hash read
// (checkOne checked the stored tree, which receipts' proofs come from,
// against each root). Where a root differs, the stored tree tells which
// event was altered (locate).
func verifyLeaves(ctx context.Context, st Store, r *cachedReader, latest Checkpoint, roots []sizeRoot, o VerifyOptions, rep *Report) error {
	tb := newTreeBuilder()
	from := int64(0) // the size of the last checkpoint matched
	for next := int64(0); next < latest.Size; {
		page, err := st.CheckpointLeaves(ctx, next, verifyWindow)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			rep.Problem = &Problem{Leaf: next, Detail: fmt.Sprintf("leaf %d of checkpoint %d has no event recorded: the tree's leaves were deleted", next, latest.Size)}
			return nil
		}
		for _, l := range page {
			if p := leafPresent(next, l); p != nil {
				rep.Problem = p
				return nil
			}
			if err := tb.add([]byte(l.Hash)); err != nil {
				return err
			}
			next++
			rep.Leaves++
			for len(roots) > 0 && roots[0].size == next {
				if root, err := tb.root(); err != nil || root != roots[0].root {
					rep.Problem, err = locate(ctx, st, r, latest, from, next)
					return err
				}
				from, roots = next, roots[1:]
			}
			if next == latest.Size {
				break
			}
		}
		if o.Progress != nil {
			o.Progress(next, latest.Size)
		}
	}
	return nil
}

// leafPresent checks that leaf l is the one expected at index want and
// that its event is still there.
func leafPresent(want int64, l Leaf) *Problem {
	switch {
	case l.Index != want:
		return &Problem{Leaf: want, Seq: l.Seq, Detail: fmt.Sprintf("leaf %d is missing (the next recorded is %d)", want, l.Index)}
	case l.Hash == "":
		return &Problem{Leaf: l.Index, Seq: l.Seq, Detail: fmt.Sprintf("the event at seq %d, folded as leaf %d, is gone", l.Seq, l.Index)}
	}
	return nil
}

// locate finds, among the leaves [from, to) of a checkpoint whose root the
// events do not give, the first whose event or stored hashes changed.
func locate(ctx context.Context, st Store, r *cachedReader, latest Checkpoint, from, to int64) (*Problem, error) {
	for next := from; next < to; {
		page, err := st.CheckpointLeaves(ctx, next, int(min(to-next, verifyWindow)))
		if err != nil || len(page) == 0 {
			return nil, err
		}
		if err := r.prefetch(page[0].Index, page[len(page)-1].Index+1, latest.Size); err != nil {
			return nil, err
		}
		for _, l := range page {
			if p := checkLeaf(r, latest, next, l); p != nil {
				return p, nil
			}
			next++
		}
	}
	return &Problem{Size: to, Detail: fmt.Sprintf("checkpoint %d's root is not the tree of the events folded into it: the events or the tree were altered", to)}, nil
}

// checkLeaf checks leaf l (expected at index want) into the stored tree:
// the hashes folding it stores, recomputed from its event's hash and the
// stored hashes left of it (checked by the leaves before), must be the
// ones stored. Over every leaf in order that rebuilds the whole stored
// tree from the events, and checkOne found the latest root to be the
// stored tree's: each leaf is proved included as an inclusion proof
// would, at about two hashes a leaf instead of one proof's log2(size).
func checkLeaf(r *cachedReader, latest Checkpoint, want int64, l Leaf) *Problem {
	switch {
	case l.Index != want:
		return &Problem{Leaf: want, Seq: l.Seq, Detail: fmt.Sprintf("leaf %d is missing (the next recorded is %d)", want, l.Index)}
	case l.Hash == "":
		return &Problem{Leaf: l.Index, Seq: l.Seq, Detail: fmt.Sprintf("the event at seq %d, folded as leaf %d, is gone", l.Seq, l.Index)}
	}
	hs, err := tlog.StoredHashes(l.Index, []byte(l.Hash), r)
	if err != nil {
		return &Problem{Leaf: l.Index, Seq: l.Seq, Detail: fmt.Sprintf("the stored tree cannot give leaf %d's hashes: %v", l.Index, err)}
	}
	start := tlog.StoredHashIndex(0, l.Index)
	for i, h := range hs {
		stored, err := r.one(start + int64(i))
		switch {
		case err != nil:
			return &Problem{Leaf: l.Index, Seq: l.Seq, Detail: fmt.Sprintf("the stored tree has no hash %d for leaf %d: %v", start+int64(i), l.Index, err)}
		case stored == h:
		case i == 0:
			return &Problem{Leaf: l.Index, Seq: l.Seq, Detail: fmt.Sprintf("the event at seq %d is not the one folded as leaf %d into checkpoint %d: it was altered", l.Seq, l.Index, latest.Size)}
		default:
			return &Problem{Leaf: l.Index, Seq: l.Seq, Detail: fmt.Sprintf("the stored tree's hash %d, above leaf %d, is not its children's: the tree was altered", start+int64(i), l.Index)}
		}
	}
	return nil
}

func verifyKept(r tlog.HashReader, latest *Checkpoint, kept Checkpoint, rep *Report) {
	size := int64(0)
	if latest != nil {
		size = latest.Size
	}
	if kept.Size > size {
		rep.Problem = &Problem{Size: kept.Size, Detail: fmt.Sprintf("the kept checkpoint has %d leaves but the log's latest has %d: events were cut from its end", kept.Size, size)}
		return
	}
	if kept.Size == 0 {
		rep.KeptExtended = true
		return
	}
	proof, err := tlog.ProveTree(size, kept.Size, r)
	if err == nil {
		err = tlog.CheckTree(proof, size, latest.Root, kept.Size, kept.Root)
	}
	if err != nil {
		rep.Problem = &Problem{Size: kept.Size, Detail: fmt.Sprintf("the log does not extend the kept checkpoint of size %d: its history was rewritten", kept.Size)}
		return
	}
	rep.KeptExtended = true
}

// cachedReader reads stored hashes, keeping the ones above the leaves:
// proofs of neighbouring leaves share them.
type cachedReader struct {
	ctx   context.Context
	st    Store
	cache map[int64]tlog.Hash
}

func newCachedReader(ctx context.Context, st Store) *cachedReader {
	return &cachedReader{ctx: ctx, st: st, cache: map[int64]tlog.Hash{}}
}

func (r *cachedReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var miss []int64
	for _, x := range indexes {
		if _, ok := r.cache[x]; !ok {
			miss = append(miss, x)
		}
	}
	if len(miss) > 0 {
		got, err := r.st.CheckpointHashes(r.ctx, miss)
		if err != nil {
			return nil, err
		}
		if len(r.cache) > 1<<20 {
			clear(r.cache)
		}
		for i, x := range miss {
			r.cache[x] = got[i]
		}
	}
	for i, x := range indexes {
		out[i] = r.cache[x]
	}
	return out, nil
}

// one reads the stored hash at index x.
func (r *cachedReader) one(x int64) (tlog.Hash, error) {
	if h, ok := r.cache[x]; ok {
		return h, nil
	}
	got, err := r.ReadHashes([]int64{x})
	if err != nil {
		return tlog.Hash{}, err
	}
	return got[0], nil
}

// prefetch reads, in a few queries, every hash stored for the leaves
// [from, to) of a tree of size n: most of what their proofs read.
func (r *cachedReader) prefetch(from, to, n int64) error {
	to = min(to, n)
	if from >= to {
		return nil
	}
	var idx []int64
	for x := tlog.StoredHashIndex(0, from); x < tlog.StoredHashIndex(0, to); x++ {
		idx = append(idx, x)
	}
	_, err := r.ReadHashes(idx)
	return err
}
