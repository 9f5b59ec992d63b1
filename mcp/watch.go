package mcp

import (
	"context"
	"fmt"
	"sync"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// ChangedError refuses a call to a tool the server changed after Load: a
// re-list after notifications/tools/list_changed found its schema,
// description or output schema no longer matching its pin, or the tool
// gone, or the re-list itself failed. It stays refused for the life of the
// connection; review the server, pin again and Load again.
type ChangedError struct {
	Server string
	Tool   string
	Reason string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("mcp: server %q: tool %q is refused for the rest of this connection: %s; review the server, pin it again and load it again",
		e.Server, trace.Sanitize(e.Tool), trace.Sanitize(e.Reason))
}

// Is matches ErrToolChanged.
func (e *ChangedError) Is(target error) bool { return target == ErrToolChanged }

// watcher re-lists when the server says its tools changed, and remembers
// which loaded tools no longer match their pins. A call waits for a re-list
// the connection has already heard of, so a call made after the
// notification arrived is judged by the new listing.
type watcher struct {
	c *Connection

	mu      sync.Mutex
	started bool
	pins    map[string]PinnedTool // loaded tools, by the server's name
	changed map[string]string     // tool -> reason, sticky
	wanted  uint64                // notifications heard
	done    uint64                // notifications a finished re-list covers
	settled chan struct{}         // closed when done catches up with wanted

	kick chan struct{}
	quit chan struct{}

	// relisted, set only by tests, runs after each re-list.
	relisted func()
}

func newWatcher(c *Connection) *watcher {
	return &watcher{c: c, changed: map[string]string{}, settled: make(chan struct{}), kick: make(chan struct{}, 1), quit: make(chan struct{})}
}

// start begins watching the loaded tools, judging them first against the
// listing Load saw.
func (w *watcher) start(l *listing, tools []agentrt.Tool) {
	w.mu.Lock()
	w.pins = map[string]PinnedTool{}
	for _, t := range tools {
		mt := t.(*tool)
		w.pins[mt.name] = mt.pin
	}
	w.started = true
	w.mu.Unlock()
	go w.loop()
}

// notify records a tools/list_changed notification. Before start (during
// Load's own listing) there is nothing to judge yet, and a notification
// still counts: the first re-list after start covers it.
func (w *watcher) notify() {
	w.mu.Lock()
	w.wanted++
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
}

func (w *watcher) loop() {
	for {
		select {
		case <-w.quit:
			return
		case <-w.kick:
		}
		w.mu.Lock()
		target := w.wanted
		w.mu.Unlock()
		w.relist()
		w.mu.Lock()
		if target > w.done {
			w.done = target
		}
		if w.done == w.wanted {
			close(w.settled)
			w.settled = make(chan struct{})
		}
		hook := w.relisted
		w.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
}

// relist lists again under the connect bounds and marks every loaded tool
// that no longer matches its pin.
func (w *watcher) relist() {
	srv := &w.c.srv
	ctx, cancel := context.WithTimeout(context.Background(), srv.connectTimeout())
	defer cancel()
	go func() {
		select {
		case <-w.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	l, err := w.c.list(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, pin := range w.pins {
		if _, done := w.changed[name]; done {
			continue
		}
		if err != nil {
			w.changed[name] = "the re-list after tools/list_changed failed: " + err.Error()
			continue
		}
		if reason := drift(pin, l.byName[name]); reason != "" {
			w.changed[name] = reason
		}
	}
}

// drift says how a live tool differs from its pin, or "".
func drift(pin PinnedTool, live *liveTool) string {
	switch {
	case live == nil:
		return "the server no longer offers it"
	case live.problem != "":
		return live.problem
	case live.SchemaHash != pin.SchemaHash:
		return "its input schema changed since it was pinned"
	case live.DescriptionHash != pin.DescriptionHash:
		return "its description changed since it was pinned"
	case live.OutputSchemaHash != pin.OutputSchemaHash:
		return "its output schema changed since it was pinned"
	}
	return ""
}

// check waits for any re-list already announced, then refuses a tool that
// changed.
func (w *watcher) check(ctx context.Context, name string) error {
	for {
		w.mu.Lock()
		if reason, ok := w.changed[name]; ok {
			w.mu.Unlock()
			return &ChangedError{Server: w.c.srv.Name, Tool: name, Reason: reason}
		}
		if !w.started || w.done == w.wanted {
			w.mu.Unlock()
			return nil
		}
		ch := w.settled
		w.mu.Unlock()
		select {
		case <-ch:
		case <-w.quit:
			return fmt.Errorf("mcp: server %q: %w", w.c.srv.Name, ErrClosed)
		case <-ctx.Done():
			return fmt.Errorf("mcp: server %q: tool %q: waiting for the re-list the server asked for: %w", w.c.srv.Name, trace.Sanitize(name), ctx.Err())
		}
	}
}
