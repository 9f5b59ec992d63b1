//lint:file-ignore SA1019 MCP logging and sampling are deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards logging under policy and must refuse sampling, so it handles both.

package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// A 2025-11-25 server's sampling request is refused and reported through
// Notifications.Refused, never answered; its resources reach the
// connection's caller. (Progress and logging: the proxy's forward tests.)
func TestConnection_RefusesSamplingAndPassesSurfaces(t *testing.T) {
	srv := legacySDKServer("s", func(s *sdk.Server) {
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

// A 2025-11-25 server's prompts and resources list_changed reach the Connection's
// Notifications hooks, each on its own hook, when the server adds a prompt
// or a resource after the connection opened.
func TestConnection_ListChangedHooksHearPromptsAndResources(t *testing.T) {
	var mu sync.Mutex
	var live *sdk.Server
	srv := legacySDKServer("lists", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object"}`)}, okHandler)
		mu.Lock()
		live = s
		mu.Unlock()
	})
	prompts, resources := make(chan struct{}, 16), make(chan struct{}, 16)
	srv.Notifications = &Notifications{
		PromptListChanged:   func() { prompts <- struct{}{} },
		ResourceListChanged: func() { resources <- struct{}{} },
	}
	m := pin(t, srv)
	_, rep := load(t, srv, m, Rules{"read": {SideEffect: agentrt.ReadOnly}})
	defer rep.Connection.Close()
	wait := func(c chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("notifications/%s/list_changed did not reach the hook", what)
		}
	}
	mu.Lock()
	s := live
	mu.Unlock()
	s.AddPrompt(&sdk.Prompt{Name: "brief"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	wait(prompts, "prompts")
	select {
	case <-resources:
		t.Fatal("a prompt change reached the resources hook")
	default:
	}
	s.AddResource(&sdk.Resource{URI: "file:///notes", Name: "notes"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{}, nil
	})
	wait(resources, "resources")
	lp, err := rep.Connection.ListPrompts(context.Background(), "")
	must(t, err == nil && len(lp.Prompts) == 1 && lp.Prompts[0].Name == "brief", "prompts after the change: %v %v", lp, err)
}
