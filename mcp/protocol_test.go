//lint:file-ignore SA1019 MCP logging is deprecated in the 2026-07-28 protocol but servers still send it in the deprecation window; the test checks the level reaches them.

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// Each server is spoken to in the newest revision it offers: 2026-07-28
// with a server that answers server/discover with it (only or beside the
// older one), 2025-11-25 with one limited to that revision and with one
// that does not know server/discover at all.
func TestConnect_NegotiatesTheNewestRevisionEachServerOffers(t *testing.T) {
	tool := func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, okHandler)
	}
	only := sdkServer("only", tool)
	only.transport = func() sdk.Transport {
		ct, st := sdk.NewInMemoryTransports()
		s := sdk.NewServer(&sdk.Implementation{Name: "only", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{protocolVersion}})
		tool(s)
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}
	for _, c := range []struct {
		name string
		srv  Server
		want string
	}{
		{"both revisions", sdkServer("both", tool), "2026-07-28"},
		{"2026-07-28 only", only, "2026-07-28"},
		{"2025-11-25 only", legacySDKServer("legacy", tool), "2025-11-25"},
		{"no server/discover", rawServer("raw", listOnly(`{"tools":[]}`)), "2025-11-25"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := connect(context.Background(), &c.srv)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer conn.Close()
			if got := conn.Protocol(); got != c.want {
				t.Fatalf("negotiated %q, want %q", got, c.want)
			}
		})
	}
}

// A 2026-07-28 server may let a client keep its tools/list for a while
// (ttlMs); a second listing on the same connection still goes over the
// wire, so the listing is read from the bytes the server sent now and a
// change it made since is seen.
func TestList_RelistGoesOverTheWireDespiteTheServersTTL(t *testing.T) {
	var live *sdk.Server
	srv := sdkServer("cached", func(s *sdk.Server) {})
	srv.transport = func() sdk.Transport {
		ct, st := sdk.NewInMemoryTransports()
		live = sdk.NewServer(&sdk.Implementation{Name: "cached", Version: "1"}, &sdk.ServerOptions{
			SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.TTLMs = 3_600_000 }})
		live.AddTool(&sdk.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, okHandler)
		if _, err := live.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}
	conn, err := connect(context.Background(), &srv)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close()
	must(t, conn.Protocol() == "2026-07-28", "negotiated %q", conn.Protocol())
	first, err := conn.list(context.Background())
	must(t, err == nil && len(first.tools) == 1, "first listing: %v %v", first, err)
	live.AddTool(&sdk.Tool{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)}, okHandler)
	second, err := conn.list(context.Background())
	must(t, err == nil, "second listing: %v", err)
	must(t, len(second.tools) == 2 && second.byName["b"] != nil, "the second listing missed the new tool: %d tools", len(second.tools))
}

// Server.Protocol pins the revision: "2025-11-25" initializes a session
// with a server that offers 2026-07-28 too, "2026-07-28" refuses a server
// that offers only 2025-11-25, and any other value (or 2026-07-28 over the
// legacy SSE transport) is refused before anything is started.
func TestConnect_ProtocolPinsTheRevision(t *testing.T) {
	tool := func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, okHandler)
	}
	both := sdkServer("both", tool)
	both.Protocol = "2025-11-25"
	conn, err := connect(context.Background(), &both)
	must(t, err == nil, "connect: %v", err)
	must(t, conn.Protocol() == "2025-11-25", "negotiated %q with Protocol 2025-11-25", conn.Protocol())
	conn.Close()

	legacy := legacySDKServer("legacy", tool)
	legacy.Protocol = "2026-07-28"
	_, err = connect(context.Background(), &legacy)
	must(t, err != nil && strings.Contains(err.Error(), `settled on protocol "2025-11-25"`), "a 2025-11-25 server under Protocol 2026-07-28: %v", err)

	for _, bad := range []Server{
		{Name: "x", Command: []string{"x"}, Protocol: "2024-11-05"},
		{Name: "x", Endpoint: "http://127.0.0.1:1/sse", SSE: true, Protocol: "2026-07-28"},
	} {
		_, err := connect(context.Background(), &bad)
		must(t, errors.Is(err, ErrInvalidServer) && strings.Contains(err.Error(), "Protocol"), "Protocol %q (SSE %v): %v", bad.Protocol, bad.SSE, err)
	}
}

// A 2026-07-28 server has no logging/setLevel: the level the proxy was
// given goes in each later request's _meta, and the server's log messages
// at that level reach Notifications.Log; below it, none do.
func TestConnection_LogLevelTravelsInEachRequestsMeta(t *testing.T) {
	srv := sdkServer("logs", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "debug", Data: "fine detail"})
				_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Data: "disk nearly full"})
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
			})
	})
	var mu sync.Mutex
	var heard []string
	warned := make(chan struct{}, 1)
	srv.Notifications = &Notifications{Log: func(p *sdk.LoggingMessageParams) {
		mu.Lock()
		heard = append(heard, fmt.Sprint(p.Data))
		mu.Unlock()
		if p.Level == "warning" {
			warned <- struct{}{}
		}
	}}
	m := pin(t, srv)
	tools, rep := load(t, srv, m, Rules{"work": {SideEffect: agentrt.ReadOnly}})
	must(t, rep.Connection.Protocol() == "2026-07-28", "negotiated %q", rep.Connection.Protocol())
	must(t, rep.Connection.SetLoggingLevel(context.Background(), "info") == nil, "SetLoggingLevel failed")
	_, err := tools[0].Call(context.Background(), agentrt.ToolCall{Args: json.RawMessage(`{}`)})
	must(t, err == nil, "call: %v", err)
	// Notifications are delivered on the connection's reader, maybe after
	// the answer; the debug message was sent before the warning, if at all.
	select {
	case <-warned:
	case <-time.After(10 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	must(t, len(heard) == 1 && heard[0] == "disk nearly full", "log messages heard: %q", heard)
}
