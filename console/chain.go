package console

import (
	"net/http"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/trace"
)

// chainPage is what the chain page shows. Since events chain per run (ADR
// 0015) the newest event's hash vouches for its run only; the latest
// checkpoint is the head that vouches for every run, so it is the one the
// page asks the operator to keep.
type chainPage struct {
	Report agentrt.VerifyReport
	// Seq, RunID and Hash are the newest event, its run and the run's
	// hash there (Seq 0 when there are no events).
	Seq         int64
	RunID, Hash string
	// Checkpoint is the latest checkpoint (nil: none yet, or a store that
	// keeps none), Kept it as verify -head takes it, At its time.
	Checkpoint *checkpoint.Checkpoint
	Kept, At   string
}

func (h *Handler) pageChain(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	rep, err := h.cfg.Store.VerifyEvents(ctx, 0, 0)
	if err != nil {
		http.Error(w, "verifying the chain failed", http.StatusInternalServerError)
		return
	}
	d := chainPage{Report: rep}
	seq, hash, err := h.cfg.Store.ChainHead(ctx)
	if err != nil {
		http.Error(w, "reading the chain head failed", http.StatusInternalServerError)
		return
	}
	if seq > 0 {
		evs, err := h.cfg.Store.ListEventsAfter(ctx, "", seq-1, 1)
		if err != nil || len(evs) == 0 {
			http.Error(w, "reading the newest event failed", http.StatusInternalServerError)
			return
		}
		d.Seq, d.RunID, d.Hash = seq, trace.Sanitize(evs[0].RunID), trace.Sanitize(hash)
	}
	if cs, err := checkpoint.For(h.cfg.Store); err == nil {
		c, ok, err := cs.CheckpointLatest(ctx)
		if err != nil {
			http.Error(w, "reading the latest checkpoint failed", http.StatusInternalServerError)
			return
		}
		if ok {
			d.Checkpoint, d.Kept, d.At = &c, c.Kept(), c.At.UTC().Format(time.RFC3339)
		}
	}
	h.render(w, "chain.html", page{Title: "Chain", CSRF: s.csrf, Who: s.name, Data: d})
}
