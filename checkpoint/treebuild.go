package checkpoint

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// treeBuilder rebuilds a tree from its leaves in memory with tlog's own
// functions, keeping only the hashes later leaves and the tree's hash
// read: the roots of the perfect subtrees the size splits into (at most
// 63), so memory stays flat however large the log.
type treeBuilder struct {
	n   int64
	mem map[int64]tlog.Hash
}

func newTreeBuilder() *treeBuilder { return &treeBuilder{mem: map[int64]tlog.Hash{}} }

// ReadHashes implements tlog.HashReader over what the builder keeps.
func (t *treeBuilder) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := t.mem[x]
		if !ok {
			return nil, fmt.Errorf("agentrt: tree hash %d was not kept while rebuilding %d leaves", x, t.n)
		}
		out[i] = h
	}
	return out, nil
}

// add appends the leaf whose record is data.
func (t *treeBuilder) add(data []byte) error {
	hs, err := tlog.StoredHashes(t.n, data, t)
	if err != nil {
		return err
	}
	start := tlog.StoredHashIndex(0, t.n)
	for i, h := range hs {
		t.mem[start+int64(i)] = h
	}
	t.n++
	if len(t.mem) > 1024 {
		t.prune()
	}
	return nil
}

// prune keeps only the roots of the perfect subtrees t.n splits into.
func (t *treeBuilder) prune() {
	keep := make(map[int64]tlog.Hash, 64)
	for level := 0; level < 63; level++ {
		if t.n>>level&1 == 1 {
			x := tlog.StoredHashIndex(level, t.n>>level-1)
			keep[x] = t.mem[x]
		}
	}
	t.mem = keep
}

// root is the tree's hash at its size.
func (t *treeBuilder) root() (tlog.Hash, error) { return tlog.TreeHash(t.n, t) }
