package proxy

import (
	"context"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// Erasing a run (agentrt erase, retain, agentrt.Erase) changes only the
// runs database. The index keeps, per call, the request key (a plain
// SHA-256 of the tool's name and arguments, which confirms a guess of
// them) and the failure or refusal text. On start the proxy clears both
// from every row whose run was erased, closes the row (an erased call
// answers no identical call), and truncates the index's write-ahead log.
// The writer runs with secure_delete on, so the cells the sweep frees are
// zeroed. Between an erasure and the next start the status tool reads the
// runs database and quotes no text of an erased run.

// sweepPage bounds how many rows one pass of the sweep reads.
const sweepPage = 500

// sweepErased clears the rows of erased runs and checkpoints the index.
// It returns how many rows it cleared; a checkpoint another reader held
// back is said on stderr, and finished by the next one.
func (p *Proxy) sweepErased(ctx context.Context) (int, error) {
	cleared := 0
	var after int64
	for {
		ids, runs, err := p.ix.Unswept(ctx, after, sweepPage)
		if err != nil {
			return cleared, err
		}
		var erased []int64
		for i, runID := range runs {
			gone, err := runErased(ctx, p.store, runID)
			if err != nil {
				return cleared, err
			}
			if gone {
				erased = append(erased, ids[i])
			}
		}
		if len(erased) > 0 {
			if err := p.ix.ClearErased(ctx, erased, p.now()); err != nil {
				return cleared, err
			}
			cleared += len(erased)
		}
		if len(ids) < sweepPage {
			break
		}
		after = ids[len(ids)-1]
	}
	if cleared > 0 {
		if err := p.ix.Checkpoint(ctx); err != nil {
			p.logf("agentrt-proxy: the rows of %d erased call(s) were cleared, but the index's log still holds copies: %s", cleared, trace.Sanitize(err.Error()))
		}
	}
	return cleared, nil
}

// runErased reports whether a run was erased: it has ended and its last
// event is its run.erased (erasure appends it, and an erased run takes no
// further event).
func runErased(ctx context.Context, st agentrt.StoreReader, runID string) (bool, error) {
	run, err := st.GetRun(ctx, runID)
	if err != nil || !run.Status.Terminal() {
		// A row whose run was never created (the proxy stopped between
		// the claim and the run) has nothing erased.
		return false, nil
	}
	_, n, err := st.ListEventsPage(ctx, runID, 1, 0)
	if err != nil || n == 0 {
		return false, err
	}
	last, _, err := st.ListEventsPage(ctx, runID, 1, n-1)
	if err != nil {
		return false, err
	}
	return len(last) == 1 && last[0].Type == agentrt.EventRunErased, nil
}
