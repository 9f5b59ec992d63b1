package console

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// streamEvents tells a live page, as server-sent events, that the event
// log moved: one "change" event per poll that found new events, naming the
// newest seq. The page then fetches itself again. It follows the log,
// not this process's decisions, so a decision made anywhere (the CLI, a
// worker, another console) shows.
//
// Each tick rechecks the stream's session: when it has ended (signed
// out, idle, past its lifetime, or its approver removed, which the
// shared poll reads through the store) the stream sends one "ended" event
// and closes. An open stream is not use: it does not keep its session
// from idling out. A session holds at most StreamsPerSession streams and
// the process MaxStreams; every stream of the process shares one poll.
func (h *Handler) streamEvents(w http.ResponseWriter, r *http.Request, s *session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	if !h.openStream(s.key) {
		w.Header().Set("Retry-After", "10")
		apiError(w, http.StatusTooManyRequests, CodeRateLimited, "too many live pages are open; close one")
		return
	}
	defer h.closeStream(s.key)
	cursor, _, err := h.cfg.Store.ChainHead(r.Context())
	if err != nil {
		http.Error(w, "reading the chain head failed", http.StatusInternalServerError)
		return
	}
	ticks := h.hub.subscribe()
	defer h.hub.unsubscribe(ticks)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	// The server's whole-request read deadline would end a stream that
	// outlives it; the stream has no body to read.
	rc.SetReadDeadline(time.Time{})
	fmt.Fprint(w, ": following\n\n")
	fl.Flush()
	quiet := time.Now()
	for {
		var head int64
		select {
		case <-r.Context().Done():
			return
		case head = <-ticks:
		}
		rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if !h.streamLive(s.key) {
			fmt.Fprint(w, "event: ended\ndata: {}\n\n")
			fl.Flush()
			return
		}
		if head <= cursor {
			// A comment now and then, so a proxy or a closed tab is noticed.
			if time.Since(quiet) >= 15*time.Second {
				quiet = time.Now()
				if _, err := fmt.Fprint(w, ": idle\n\n"); err != nil {
					return
				}
				fl.Flush()
			}
			continue
		}
		cursor = head
		if _, err := fmt.Fprintf(w, "event: change\ndata: {\"seq\":%d}\n\n", cursor); err != nil {
			return
		}
		fl.Flush()
	}
}

// openStream counts a stream against its session and the process.
func (h *Handler) openStream(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	if s == nil || s.streams >= h.cfg.StreamsPerSession || h.streams >= h.cfg.MaxStreams {
		return false
	}
	s.streams++
	h.streams++
	return true
}

func (h *Handler) closeStream(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams--
	if s := h.sessions[key]; s != nil {
		s.streams--
	}
}

// streamLive reports whether a stream's session is still live, without
// touching it.
func (h *Handler) streamLive(key string) bool {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[key]
	return s != nil && h.live(s, now)
}

// hub is the one poll of the store that every stream of a Handler shares.
// It runs while any stream is open: each PollInterval it reads the chain's
// newest seq, reads the approver of every session with an open stream
// (ending the sessions of one no longer enrolled), and hands the seq to
// every stream, which then rechecks its session.
type hub struct {
	h    *Handler
	mu   sync.Mutex
	subs map[chan int64]struct{}
	stop chan struct{} // closed when the last stream leaves; nil when not running
	n    int64         // polls made
}

func (b *hub) subscribe() chan int64 {
	ch := make(chan int64, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[chan int64]struct{}{}
	}
	b.subs[ch] = struct{}{}
	if b.stop == nil {
		b.stop = make(chan struct{})
		go b.run(b.stop)
	}
	return ch
}

func (b *hub) unsubscribe(ch chan int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, ch)
	if len(b.subs) == 0 && b.stop != nil {
		close(b.stop)
		b.stop = nil
	}
}

// polls is how many shared polls were made.
func (b *hub) polls() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *hub) run(stop chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	tick := time.NewTicker(b.h.cfg.PollInterval)
	defer tick.Stop()
	var head int64
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if seq, _, err := b.h.cfg.Store.ChainHead(ctx); err == nil {
			head = seq
		}
		for _, id := range b.h.streamingApprovers() {
			b.h.enrolled(ctx, id)
		}
		b.mu.Lock()
		b.n++
		for ch := range b.subs {
			select {
			case <-ch: // a slow stream gets the newest seq only
			default:
			}
			ch <- head
		}
		b.mu.Unlock()
	}
}

// streamingApprovers lists, once each, the approvers of sessions with an
// open stream.
func (h *Handler) streamingApprovers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, s := range h.sessions {
		if s.streams > 0 && !seen[s.approverID] {
			seen[s.approverID] = true
			out = append(out, s.approverID)
		}
	}
	return out
}
