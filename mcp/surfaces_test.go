//lint:file-ignore SA1019 MCP logging and sampling are deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards logging under policy and must refuse sampling, so it handles both.

package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// A server's sampling request is refused and reported through
// Notifications.Refused, never answered; its resources reach the
// connection's caller. (Progress and logging: the proxy's forward tests.)
func TestConnection_RefusesSamplingAndPassesSurfaces(t *testing.T) {
	srv := sdkServer("s", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				_, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 1})
				text := "answered"
				if err != nil {
					text = "refused"
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
			})
		s.AddResource(&sdk.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "file:///a", Text: "hello"}}}, nil
		})
	})
	var mu sync.Mutex
	var refused []string
	srv.Notifications = &Notifications{Refused: func(m string) { mu.Lock(); refused = append(refused, m); mu.Unlock() }}
	m := pin(t, srv)
	tools, rep := load(t, srv, m, Rules{"ask": {SideEffect: agentrt.ReadOnly}})
	res, err := tools[0].Call(context.Background(), agentrt.ToolCall{Args: json.RawMessage(`{}`)})
	must(t, err == nil && string(res.Content) == `"refused"`, "call: %s %v", res.Content, err)
	mu.Lock()
	must(t, len(refused) == 1 && refused[0] == "sampling/createMessage", "refused: %v", refused)
	mu.Unlock()
	c := rep.Connection
	must(t, c.Capabilities().Resources != nil, "no resources capability")
	rr, err := c.ReadResource(context.Background(), "file:///a")
	must(t, err == nil && rr.Contents[0].Text == "hello", "read: %v %v", rr, err)
}
