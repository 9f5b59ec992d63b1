package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// Calls in flight to one HTTP server share a pool of connections: waves of
// concurrent calls reuse the connections the first wave opened instead of
// opening (and closing) one for nearly every call, as net/http's default
// of two idle connections a host would.
func TestHTTP_ConcurrentCallsReuseTheirConnections(t *testing.T) {
	const width, waves = 16, 5
	var mu sync.Mutex
	conns := map[string]bool{}
	mcp := mcpHandler(nil, func(w http.ResponseWriter, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "application/json")
		switch method {
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"r","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}}`, id)
		case "tools/call":
			time.Sleep(20 * time.Millisecond) // so a wave's calls overlap
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
		}
	})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		mcp.ServeHTTP(w, r)
	}))
	defer s.Close()
	srv := httpServer(s.URL)
	tools, _ := load(t, srv, pin(t, srv), Rules{"r": {SideEffect: agentrt.ReadOnly}})
	for range waves {
		var wg sync.WaitGroup
		for range width {
			wg.Go(func() {
				if _, err := tools[0].Call(context.Background(), agentrt.ToolCall{Args: json.RawMessage(`{}`)}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	// The first wave opens up to width connections (the load's own
	// requests ride on them); later waves open none.
	if len(conns) > width+2 {
		t.Errorf("%d waves of %d calls opened %d connections, want at most %d", waves, width, len(conns), width+2)
	}
}
