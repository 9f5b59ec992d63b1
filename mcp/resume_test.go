package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// A call whose event stream the server closes after its first event (with
// an id and a retry delay, as SEP-1699 allows) is resumed: the client
// waits the delay, reopens the stream with GET and Last-Event-ID, and the
// result arrives there. The call is POSTed once; nothing sends it again.
func TestCall_DroppedStreamIsResumedNeverResent(t *testing.T) {
	const retry = 150 * time.Millisecond
	var calls atomic.Int32
	var mu sync.Mutex
	var pending json.RawMessage // the call's id, answered on the resumed stream
	var closedAt time.Time
	var resumedAfter time.Duration
	var lastEventID string
	get := func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Last-Event-ID")
		mu.Lock()
		p := pending
		if id != "" {
			lastEventID, resumedAfter, pending = id, time.Since(closedAt), nil
		}
		mu.Unlock()
		if id == "" || p == nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\nid: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done once\"}]}}\n\n", p)
	}
	s := httpMCPStreams(t, get, func(w http.ResponseWriter, id json.RawMessage, method string) {
		switch method {
		case "tools/list":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"act","inputSchema":{"type":"object"}}]}}`, id)
		case "tools/call":
			calls.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: e1\nretry: %d\ndata: \n\n", retry.Milliseconds())
			w.(http.Flusher).Flush()
			mu.Lock()
			pending, closedAt = id, time.Now()
			mu.Unlock()
		}
	})
	srv := httpServer(s.URL)
	m := pin(t, srv)
	tools, rep := load(t, srv, m, Rules{"act": {SideEffect: agentrt.RemoteMutation}})
	must(t, len(tools) == 1, "act did not register: %v", rep)
	res, err := tools[0].Call(context.Background(), agentrt.ToolCall{})
	must(t, err == nil && string(res.Content) == `"done once"`, "call: %s %v", res.Content, err)
	must(t, calls.Load() == 1, "tools/call was POSTed %d times", calls.Load())
	mu.Lock()
	defer mu.Unlock()
	must(t, lastEventID == "e1", "resumed with Last-Event-ID %q", lastEventID)
	must(t, resumedAfter >= retry-20*time.Millisecond, "resumed %s after the stream closed, before the server's retry of %s", resumedAfter, retry)
}
