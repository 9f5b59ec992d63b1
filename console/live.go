package console

import (
	"fmt"
	"net/http"
	"time"
)

// streamEvents tells a live page, as server-sent events, that the event
// log moved: one "change" event per poll that found new events, naming the
// newest seq. The page then fetches itself again. It follows the log,
// not this process's decisions, so a decision made anywhere (the CLI, a
// worker, another console) shows.
func (h *Handler) streamEvents(w http.ResponseWriter, r *http.Request, _ *session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	cursor, _, err := h.cfg.Store.ChainHead(r.Context())
	if err != nil {
		http.Error(w, "reading the chain head failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	fmt.Fprint(w, ": following\n\n")
	fl.Flush()
	tick := time.NewTicker(h.cfg.PollInterval)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		evs, err := h.cfg.Store.ListEventsAfter(r.Context(), "", cursor, 256)
		if err != nil {
			return
		}
		rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if len(evs) == 0 {
			// A comment now and then, so a proxy or a closed tab is noticed.
			if idle++; idle*int(h.cfg.PollInterval/time.Millisecond) >= 15000 {
				idle = 0
				if _, err := fmt.Fprint(w, ": idle\n\n"); err != nil {
					return
				}
				fl.Flush()
			}
			continue
		}
		cursor = evs[len(evs)-1].Seq
		if _, err := fmt.Fprintf(w, "event: change\ndata: {\"seq\":%d}\n\n", cursor); err != nil {
			return
		}
		fl.Flush()
	}
}
